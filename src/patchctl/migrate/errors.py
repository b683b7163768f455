"""Conditions that stop ``migrate`` before any host is touched (all under PatchctlError).

Per-host failures are not exceptions: they become a HostResult, so one bad host never
stops the others.
"""

from __future__ import annotations

import difflib
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


class SourceFailsVerify(PatchctlError):
    """The tree carries patches but ``patchctl verify`` fails on it (a hand-edited patch, say):
    every host would end "ok and verified" with a tree that is not what the patchsets make."""

    exit_code = 1  # a check ran and failed (the source's verify), not a usage error

    def __init__(self, root: Path, problems: str) -> None:
        self.root = root
        super().__init__(
            f"{root}: the tree fails patchctl verify ({problems}); `patchctl verify --target {root}` shows how it "
            "differs: fix it (patchctl apply), or pass --allow-unverified to send it as it is"
        )


class UnknownHost(PatchctlError):
    """``--host NAME`` names no host of the cluster."""

    def __init__(self, cluster: str, name: str, known: list[str]) -> None:
        self.cluster, self.name = cluster, name
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        super().__init__(f"--host {name}: cluster {cluster!r} has no such host; {hint}its hosts: {', '.join(known)}")
