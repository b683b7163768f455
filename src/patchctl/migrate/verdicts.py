"""How a host's run ends, worded for the user: pure functions of what the host's agent and rsync
answered, so every wording lives in one place and HostRun only decides which one applies."""

from __future__ import annotations

from typing import Any

from patchctl import quoting
from patchctl.clusters import Cluster
from patchctl.migrate import verify_remote
from patchctl.migrate.prepare import Prepared
from patchctl.migrate.results import HostStatus
from patchctl.remote import rsync


def guard(cluster: Cluster, count: int) -> str:
    """The delete guard stopped the host: nothing was sent or deleted there."""
    return (
        f"--delete would remove {count} files, more than max_delete = {cluster.max_delete}; nothing was sent "
        f"or deleted — check the source tree, or raise clusters.{cluster.name}.max_delete in {cluster.source}"
    )


def transfer_failed(returncode: int, stderr: str, lost: bool) -> tuple[HostStatus, str]:
    """A failed rsync as a status and a cause; ``lost``: the host's master connection ended under it."""
    if lost:
        return HostStatus.UNREACHABLE, f"rsync exit {returncode}: {rsync.LOST}; re-run migrate to resume"
    status = HostStatus.UNREACHABLE if returncode == 255 else HostStatus.FAILED
    return status, rsync.cause(returncode, stderr, connected=True) + "; re-run migrate to resume"


def differing(tree: Prepared, reply: verify_remote.AgentReply) -> list[str]:
    """Files of the tree the host's check found different: what a re-send by content can fix
    (a generated file or a tagged line in a file the source lacks cannot be fixed that way)."""
    paths = {e.path for e in tree.fs.entries}
    return [path for path, _why in reply.data["problems"] if path in paths]


def repair_items(reply: verify_remote.AgentReply, paths: list[str]) -> tuple[str, ...]:
    """``path: what differed`` for each re-sent file, as the check before the repair saw it."""
    why = dict((path, w) for path, w in reply.data["problems"])
    return tuple(f"{path}: {why[path]}" for path in paths)


def repaired_reason(count: int) -> str:
    return f"{count} file(s) differed on the host after the transfer; re-sent by content and verified"


def mismatch_reason(data: dict[str, Any], count: int, resent: bool) -> str:
    """Why the host still differs, with what the user can do about each kind of difference."""
    hints = []
    if data.get("problems"):
        hints.append(
            "they still differ after being re-sent by content: something on the host changes them, or "
            "cannot be replaced there (a directory in the way?)"
            if resent
            else "see the list"
        )
    if data.get("tags_only_here"):
        hints.append("--delete removes files deleted at the source; other tagged files there are hand edits")
    return f"{count} difference(s) on the host after the transfer; " + "; ".join(hints or ["see the list"])


def planned_changes(tree: Prepared, data: dict[str, Any]) -> tuple[tuple[str, ...], int, int]:
    """--dry-run: the items a run would do on the host (send, delete, render), and the files and
    bytes it would send (the files' sizes: rsync's delta is not known without sending)."""
    sizes = {e.path: e.size for e in tree.fs.entries}
    would = [path for path, _why in data["problems"] if path in sizes]
    changes = (
        [f"send {quoting.quote_path(p)}" for p in would]
        + [f"delete {quoting.quote_path(p)}" for p in data["deletions"]]
        + [f"render {quoting.quote_path(p)}" for p in data["rendered"]]
    )
    return tuple(changes), len(would), sum(sizes[p] for p in would)
