"""What a killed patchctl leaves behind, made findable, and swept by the next run.

``kill -9`` runs no clean-up, so each scratch folder patchctl makes in ``/tmp`` carries an
``.owner`` file naming its process (pid and the kernel's start time of that pid, so a reused
pid is not taken for the owner). Any later patchctl that makes a folder of the same kind first
removes the folders of that kind whose owner is gone: only the current user's, only folders
with an owner file, never one whose owner still runs. The process groups of children started
in a session of their own (the trainer, a Ray head; see :mod:`patchctl.proc`) are listed in
such a folder too, and a sweep ends those groups before it removes the folder.

Kinds (the prefix of the folder's name): ``pcm-`` ssh control sockets, ``pcv-stage-`` validate's
staged package, ``patchctl-matrix-`` matrix's scratch trees, ``pcg-`` the process groups.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

OWNER = ".owner"
GROUPS = "groups"
#: scratch folders live here: unix socket paths must stay short (about 100 bytes)
BASE = Path("/tmp") if Path("/tmp").is_dir() else Path(tempfile.gettempdir())  # noqa: S108 - mkdtemp makes each folder


def start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (field 22 of /proc/PID/stat), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def stamp(pid: int) -> str:
    """``"PID START"``: who a folder or group belongs to, told apart from a later process with the same pid."""
    return f"{pid} {start_time(pid) or '?'}"


def alive(owner: str) -> bool:
    """Whether the process a stamp names still runs (the same process, not a reused pid)."""
    pid, _, start = owner.strip().partition(" ")
    if not pid.isdigit():
        return False
    now = start_time(int(pid))
    return now is not None and (start in ("", "?") or now == start)


def owned_dir(prefix: str) -> Path:
    """A new private folder in ``/tmp`` owned by this process, after sweeping dead ones of its
    kind (and the process groups a killed run left)."""
    for kind in {prefix, "pcg-"}:
        sweep(kind)
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=BASE))
    (path / OWNER).write_text(stamp(os.getpid()) + "\n", encoding="ascii")
    return path


@contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """:func:`owned_dir` for a ``with`` block, removed at its end (the next run removes it if
    this one is killed first)."""
    path = owned_dir(prefix)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def sweep(prefix: str) -> list[Path]:
    """Remove the current user's ``prefix*`` folders whose owner is gone, ending the process groups
    they list first; return what was removed."""
    removed = []
    for path in sorted(BASE.glob(prefix + "*")):
        try:
            if path.is_symlink() or not path.is_dir() or path.stat().st_uid != os.getuid():
                continue
            owner = (path / OWNER).read_text(encoding="ascii")
        except OSError:  # no owner file: not ours to judge (or being made right now)
            continue
        if alive(owner):
            continue
        _end_groups(path / GROUPS)
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _end_groups(listing: Path) -> None:
    """SIGKILL each listed group whose leader is the process that was recorded (or is gone
    with members left: a group id is not reused while any member lives)."""
    try:
        lines = listing.read_text(encoding="ascii").splitlines()
    except OSError:
        return
    for line in lines:
        pgid, _, start = line.partition(" ")
        if not pgid.isdigit():
            continue
        leader = start_time(int(pgid))
        if leader is not None and leader != start:
            continue  # the pid now belongs to an unrelated process that leads no group of ours
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(int(pgid), signal.SIGKILL)


_groups: Path | None = None
_groups_lock = threading.Lock()


def track_group(pgid: int) -> None:
    """Write down a child's own process group, so a run that follows a ``kill -9`` of this one
    ends it; and end those of killed runs now (a long-lived process made its own folder long ago)."""
    global _groups
    with _groups_lock:
        sweep("pcg-")
        if _groups is None:
            folder = owned_dir("pcg-")
            atexit.register(shutil.rmtree, folder, True)
            _groups = folder / GROUPS
        with open(_groups, "a", encoding="ascii") as f:
            f.write(stamp(pgid) + "\n")
