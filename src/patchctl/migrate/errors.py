"""Conditions that stop ``migrate`` before any host is touched (all under PatchctlError).

Per-host failures are not exceptions: they become a HostResult, so one bad host never
stops the others.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from patchctl.errors import ManifestError, PatchctlError

if TYPE_CHECKING:
    from patchctl.clusters import Cluster


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


class DuplicateHost(ManifestError):
    """A cluster lists one ssh destination with one root twice: two runs would write one tree."""

    def __init__(self, cluster: Cluster, index: int) -> None:
        host = cluster.hosts[index]
        self.cluster, self.index, self.host = cluster.name, index, host
        super().__init__(cluster.source, f"clusters.{cluster.name}.hosts[{index}]",
                         f"{host.ssh}:{host.root} is listed twice", "remove the duplicate")
