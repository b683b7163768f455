"""What ``migrate`` reports: one frozen result per host, a progress event stream, and the total."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass


class HostStatus(str, enum.Enum):
    """How one host ended. Spelled as users see it (table, ``--json``)."""

    #: the tree arrived and every file's sha256 and the tag inventory match the source
    OK = "ok"
    #: files differed on the host after the transfer; they were re-sent by content and now match
    REPAIRED = "repaired"
    #: the transfer finished but the host's tree differs from the source (files listed)
    MISMATCH = "mismatch"
    #: ssh could not reach the host (exit 255 before anything ran), or lost it mid-transfer
    UNREACHABLE = "unreachable"
    #: the host answered but a step failed (rsync error, delete guard, python3 missing, ...)
    FAILED = "failed"
    #: --dry-run: what would change was listed, nothing was written
    PLANNED = "planned"

    @property
    def passes(self) -> bool:
        return self in (HostStatus.OK, HostStatus.REPAIRED, HostStatus.PLANNED)


class Phase(str, enum.Enum):
    """Where a host is in its run, for the live progress display."""

    QUEUED = "queued"
    CONNECTING = "connecting"
    CHECKING = "checking"
    TRANSFERRING = "transferring"
    VERIFYING = "verifying"
    #: re-sending, by content, the files the verification found differing
    REPAIRING = "repairing"
    DONE = "done"


@dataclass(frozen=True)
class Phases:
    """Where one host's time went, in seconds, so a slow migrate can be read before it is
    profiled: the file set (listing and hashing the source, shared by every host), the transfer
    (rsync, repairs included), the verification (the host's checks, less the rendering) and the
    rendering (writing the generated files there)."""

    fileset: float = 0.0
    transfer: float = 0.0
    verify: float = 0.0
    render: float = 0.0

    def to_json(self) -> dict[str, float]:
        return {
            "fileset": round(self.fileset, 3),
            "transfer": round(self.transfer, 3),
            "verify": round(self.verify, 3),
            "render": round(self.render, 3),
        }

    def describe(self) -> str:
        return (
            f"file set {self.fileset:.2f} s, transfer {self.transfer:.2f} s, verification {self.verify:.2f} s, "
            f"rendering {self.render:.2f} s"
        )


@dataclass(frozen=True)
class Progress:
    """One progress event for one host (sent from worker threads to the CLI's callback)."""

    #: the host's ssh destination
    host: str
    phase: Phase
    #: files whose content was sent so far
    files: int = 0
    #: bytes sent so far (rsync's %b: after delta compression)
    bytes: int = 0
    #: the final status once phase is DONE
    status: HostStatus | None = None
    #: once phase is DONE: where the host's time went
    phases: Phases | None = None


#: where a migrate sends its Progress events (called from the hosts' worker threads, one at a time)
ProgressFn = Callable[[Progress], None]


@dataclass(frozen=True)
class HostResult:
    """How one host's run ended (see HostRun): a host that fails is a result, never an exception."""

    #: the ssh destination, as in the cluster config
    host: str
    #: the tree's path on that host
    root: str
    status: HostStatus
    #: files whose content rsync sent (0 on a no-change re-run; --dry-run: files that would be sent)
    files_sent: int
    #: bytes rsync sent for them (--dry-run: their size)
    bytes_sent: int
    #: wall time of this host's run
    seconds: float
    #: True when the host's tree was checked against the local manifest and matched
    verified: bool
    #: why the status is not ok (or what was repaired), worded so the user can act on it; "" when ok
    reason: str = ""
    #: what differs on the host (mismatch), one "path: problem" per item
    mismatches: tuple[str, ...] = ()
    #: files removed from the host's root because they were deleted at the source (--delete)
    deleted: tuple[str, ...] = ()
    #: --dry-run: the files rsync would send, and "delete PATH" / "render PATH" items
    changes: tuple[str, ...] = ()
    #: generated files written on the host (git_ignore.py, .patchctl/env.sh)
    rendered: tuple[str, ...] = ()
    #: repaired: "path: what differed" for each file the verification found differing after the
    #: transfer and re-sent by content
    repaired: tuple[str, ...] = ()
    #: where the host's time went
    phases: Phases = Phases()
    #: files the host's last check read to hash (the rest its hash cache vouched for)
    files_read: int = 0
    #: verified by the host's seal: its tree as it last verified it, and that was this tree
    sealed: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "host": self.host,
            "status": self.status.value,
            "files_sent": self.files_sent,
            "bytes_sent": self.bytes_sent,
            "seconds": round(self.seconds, 3),
            "verified": self.verified,
            "root": self.root,
            "reason": self.reason,
            "mismatches": list(self.mismatches),
            "deleted": list(self.deleted),
            "changes": list(self.changes),
            "rendered": list(self.rendered),
            "repaired": list(self.repaired),
            "phases": self.phases.to_json(),
            "files_read": self.files_read,
            "sealed": self.sealed,
        }


@dataclass(frozen=True)
class MigrateResult:
    """What a migrate returns, whatever happened on the hosts: the CLI only renders it (a table, or
    ``to_json()`` for ``--json``) and maps ``ok`` to the exit code."""

    cluster: str
    #: the local tree that was sent
    source: str
    #: HEAD of the source tree, None outside git
    commit: str | None
    #: how many files the tree has as git sees it (what every host receives)
    files: int
    #: one per host, in the cluster's order
    hosts: tuple[HostResult, ...]
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        return all(h.status.passes for h in self.hosts)

    @property
    def failed(self) -> tuple[HostResult, ...]:
        return tuple(h for h in self.hosts if not h.status.passes)

    def to_json(self) -> dict[str, object]:
        return {
            "cluster": self.cluster,
            "source": self.source,
            "commit": self.commit,
            "files": self.files,
            "dry_run": self.dry_run,
            "ok": self.ok,
            "hosts": [h.to_json() for h in self.hosts],
        }
