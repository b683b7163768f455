"""``gpulease``: one run of patchctl per GPU on a host, claimed for the run's whole life.

Why: verl's trainer hands weights to its vLLM engine over a ZeroMQ socket under ``/tmp`` whose
name two runs on one host can share (``rl-colocate-zmq-<GPU UUID>`` on verl 0.8, ``-replica-..``
and ``-<Ray job id>-..`` later; every fresh Ray cluster's first job is ``01000000``). Two runs
side by side then load each other's weights or wait for ever (docs/validation/repro/README.md).
So ``patchctl train`` and each ``validate`` node claim their GPUs before anything starts.

How: one file per claim in the user's private folder (``/tmp/pcv-UID/gpuleases``; the folder
``PATCHCTL_GPU_LEASES`` names instead, e.g. one that every user of a shared host can write),
holding a JSON record of the run and an exclusive ``flock`` for as long as the claiming process
lives. The kernel drops a flock when its process ends, SIGKILL included, so a claim whose file
can be locked by someone else is a dead run's and is removed, never obeyed. Reading the claims and
writing one's own happen under a second flock (the folder's mutex), so of two runs started at the
same moment exactly one sees the other. A claim never conflicts with claims of its own run
(validate's loopback hosts are one machine).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: the folder of claims, where set; else the user's private folder (statedir.py)
LEASES_ENV = "PATCHCTL_GPU_LEASES"
SUFFIX = ".lease"
MUTEX = ".mutex"


@dataclass(frozen=True)
class Gpu:
    #: the index nvidia-smi gives it on this host (the one CUDA_VISIBLE_DEVICES takes)
    index: str
    uuid: str

    def label(self) -> str:
        return f"GPU {self.index} ({self.uuid})"


@dataclass(frozen=True)
class Owner:
    """Who claims which GPUs: what the record says to the run that finds it."""

    #: a run never conflicts with itself (validate's nodes of one run on one machine)
    run: str
    #: "patchctl train", "patchctl validate"
    command: str
    run_dir: str
    host: str
    gpus: tuple[Gpu, ...]
    #: the tree's weight-sync socket is named per host, not per GPU (gpuusers.weight_socket)
    host_wide: bool
    pid: int = field(default_factory=os.getpid)
    started: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "gpus": [asdict(g) for g in self.gpus]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Owner:
        gpus = tuple(Gpu(str(g["index"]), str(g["uuid"])) for g in data.get("gpus", []))
        return cls(
            str(data["run"]),
            str(data.get("command", "patchctl")),
            str(data.get("run_dir", "?")),
            str(data.get("host", "?")),
            gpus,
            bool(data.get("host_wide")),
            int(data.get("pid", 0)),
            float(data.get("started", 0.0)),
        )

    def said(self) -> str:
        since = time.strftime("%H:%M:%S", time.localtime(self.started)) if self.started else "?"
        return f"{self.command} pid {self.pid} (run folder {self.run_dir}, since {since})"


@dataclass(frozen=True)
class Busy:
    """One reason this run may not start here: a GPU another run holds, or the host itself."""

    #: the GPU in question; None for the host as a whole
    gpu: Gpu | None
    #: who holds it, in words ("patchctl train pid 12 (run folder ...)", "pid 99 (python)")
    by: str
    #: how it was found, in words
    how: str

    def reason(self, host: str) -> str:
        what = f"{self.gpu.label()} on {host}" if self.gpu else f"{host}"
        return f"{what} is in use by {self.by}: {self.how}"


class Lease:
    """A held claim; :meth:`release` (or the process's end, however it ends) gives it back."""

    def __init__(self, path: Path, fd: int, owner: Owner) -> None:
        self.path, self.fd, self.owner = path, fd, owner

    def release(self) -> None:
        if self.fd < 0:
            return
        # unlinked first: a reader that opened it before finds it lockable, takes it for a dead
        # run's, and removes a name that is already gone
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(self.fd)
        self.fd = -1

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def folder() -> Path:
    """The folder of claims, made (0700) where missing."""
    named = os.environ.get(LEASES_ENV)
    if named:
        path = Path(named)
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return path
    from patchctl.validate.host import statedir

    path = Path(statedir.private_root()) / "gpuleases"  # no dash: the node sweep's glob skips it
    path.mkdir(mode=0o700, exist_ok=True)
    return path


@contextlib.contextmanager
def _mutex(where: Path) -> Any:
    fd = os.open(where / MUTEX, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held for the few reads and one write below
        yield
    finally:
        os.close(fd)


def _live_claims(where: Path) -> list[Owner]:
    """The claims of live processes; a dead run's file is removed on the way (call under the mutex)."""
    out = []
    for path in sorted(where.glob("*" + SUFFIX)):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:  # its holder lives
                with (
                    os.fdopen(os.dup(fd), encoding="utf-8", errors="replace") as f,
                    contextlib.suppress(ValueError, KeyError, TypeError),
                ):
                    out.append(Owner.from_json(json.loads(f.read())))
                continue
            with contextlib.suppress(OSError):  # lockable: its process is gone
                os.unlink(path)
        finally:
            os.close(fd)
    return out


def conflicts(owner: Owner, others: list[Owner]) -> list[Busy]:
    """What of ``others`` (live claims) forbids ``owner``'s run (pure)."""
    out = []
    mine = {g.uuid for g in owner.gpus}
    for other in others:
        if other.run == owner.run:
            continue
        shared = [g for g in owner.gpus if g.uuid in {o.uuid for o in other.gpus}]
        out += [Busy(g, other.said(), "it claimed this GPU for its run") for g in shared]
        if not shared and owner.host_wide and other.host_wide and mine:
            out.append(
                Busy(
                    None,
                    other.said(),
                    "both runs' verl names its weight-sync socket per host, not per GPU "
                    "(/tmp/rl-colocate-zmq-<Ray job id>-...), so they would exchange weights",
                )
            )
    return out


def probe(owner: Owner) -> list[Busy]:
    """The claims that forbid ``owner`` now, nothing held (preflight's look before the run)."""
    if not owner.gpus:
        return []
    where = folder()
    with _mutex(where):
        return conflicts(owner, _live_claims(where))


def claimed(run: str) -> set[str]:
    """The UUIDs live runs other than ``run`` hold now."""
    where = folder()
    with _mutex(where):
        return {g.uuid for o in _live_claims(where) if o.run != run for g in o.gpus}


class Refused(Exception):
    """The claim was refused: ``busy`` says by whom."""

    def __init__(self, busy: list[Busy]) -> None:
        self.busy = busy
        super().__init__(busy[0].by)


def acquire(owner: Owner) -> Lease | None:
    """Claim ``owner.gpus`` for as long as this process lives (or until released); raises
    :class:`Refused` when a live run of another holds one of them. None: no GPUs, nothing to claim."""
    if not owner.gpus:
        return None
    where = folder()
    with _mutex(where):
        busy = conflicts(owner, _live_claims(where))
        if busy:
            raise Refused(busy)
        path = where / f"{owner.pid}-{os.urandom(4).hex()}{SUFFIX}"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)  # before the mutex is let go: no reader sees it unheld
        os.write(fd, json.dumps(owner.to_json()).encode())
    return Lease(path, fd, owner)
