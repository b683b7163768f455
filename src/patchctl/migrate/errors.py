"""Conditions that stop ``migrate`` before any host is touched (all under PatchctlError).

Per-host failures are not exceptions: they become a HostResult, so one bad host never
stops the others.
"""

from __future__ import annotations

from pathlib import Path

from patchctl.errors import PatchctlError


class NotAGitTree(PatchctlError):
    def __init__(self, root: Path) -> None:
        self.root = root
        super().__init__(
            f"{root}: not inside a git work tree; migrate sends the tree as git sees it — "
            f"run `git init && git add -A && git commit -m base` there first"
        )


class TrackedFileLeftOut(PatchctlError):
    """A file git tracks would not be sent (excluded by a rule, or not a plain file)."""

    def __init__(self, paths: list[tuple[str, str]], cluster: str, config: Path) -> None:
        self.paths = paths
        shown = "; ".join(f"{p} ({why})" for p, why in paths[:5]) + (" ..." if len(paths) > 5 else "")
        super().__init__(
            f"{config}: cluster {cluster!r} would leave out {len(paths)} tracked file(s): {shown}; "
            f"add them to clusters.{cluster}.include, or stop tracking them with `git rm --cached`"
        )
