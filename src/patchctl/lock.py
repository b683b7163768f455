"""One writer at a time per tree: an advisory lock (``flock``) beside the tree's journal.

Every command that writes a tree (apply, revert; capture its ``--out``) holds the lock exclusively from before it
looks for an interrupted change until it has written; commands that only read (verify, migrate's
reading of the source) hold it shared, so they never see half of a change; and the recovery of
an interrupted change runs only under the exclusive lock. A journal whose writer still runs is
therefore never "recovered": the writer holds the lock, and the kernel drops a lock only when
its holder's process is gone (``kill -9`` included).

A second command waits :data:`WAIT` seconds (``PATCHCTL_LOCK_WAIT`` overrides), then refuses,
naming the holder: pid, command line and since when, which the holder writes into the file.

The file is ``.patchctl-journal.lock`` at the tree's root and exists only while a command runs:
the last holder unlinks it. A waiter that then wins the lock on the unlinked file sees that its
file is no longer the one at the path and starts over (the scheme of lockfile-create(1)).
"""

from __future__ import annotations

import errno
import fcntl
import os
import sys
import time
from pathlib import Path

from patchctl.errors import PatchctlError
from patchctl.journal_paths import JOURNAL_DIR

#: seconds a second command waits for the holder before it refuses
WAIT = 5.0
#: the lock of a tree, beside its journal folder (migrate never sends it: see fileset.DEBRIS_DIRS)
NAME = JOURNAL_DIR + ".lock"


class Locked(PatchctlError):
    """Another patchctl holds the tree (or ``--out``) and did not let go within the wait."""

    def __init__(self, what: Path | str, holder: str, waited: float) -> None:
        self.what, self.holder = str(what), holder
        super().__init__(
            f"{what}: in use by another patchctl ({holder or 'holder unknown'}); waited {waited:.0f} s. "
            "Let it finish, or stop that process, then run this again"
        )


def path_for(root: Path) -> Path:
    return root / NAME


def beside(out: Path) -> Path:
    """The lock of capture's ``--out`` folder: beside it, where capture stages and mends it
    (the folder itself is swapped by rename), in a parent made if missing."""
    parent = out.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    return parent / f".{out.name}.patchctl-lock"


def wait_seconds() -> float:
    raw = os.environ.get("PATCHCTL_LOCK_WAIT", "")
    try:
        return max(0.0, float(raw)) if raw else WAIT
    except ValueError:
        return WAIT


def describe() -> str:
    """This process as a holder: ``pid 123, `patchctl apply --target x`, since 10:02:03 UTC``."""
    cmd = (
        " ".join(["patchctl", *sys.argv[1:]])
        if sys.argv and sys.argv[0].endswith(("patchctl", "__main__.py"))
        else " ".join(sys.argv)
    )
    since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    return f"pid {os.getpid()}, `{cmd[:200]}`, since {since}"


class Held:
    """A lock this process holds until :meth:`release` (or the end of a ``with`` block)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self.fd = path, fd

    def release(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            _release(self.path, fd)

    def __enter__(self) -> Held:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def hold(path: Path, *, shared: bool = False, wait: float | None = None, what: Path | str | None = None) -> Held:
    """Take the lock file ``path`` (made if missing); release it with the result (a context manager).

    ``shared``: a reader's lock, held by any number of readers at once. Raises :class:`Locked`
    after ``wait`` seconds (default :func:`wait_seconds`)."""
    return Held(path, _acquire(path, shared, wait_seconds() if wait is None else wait, what or path.parent))


def _acquire(path: Path, shared: bool, wait: float, what: Path | str) -> int:
    deadline = time.monotonic() + wait
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            while True:
                try:
                    fcntl.flock(fd, mode | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EWOULDBLOCK, errno.EACCES):
                        raise
                if time.monotonic() >= deadline:
                    raise Locked(what, _holder(fd), wait)
                time.sleep(0.05)
            if _same_file(fd, path):
                _record(fd, shared)
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # won the lock of a file the last holder had unlinked: start over


def _same_file(fd: int, path: Path) -> bool:
    try:
        st, now = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino)


def _record(fd: int, shared: bool) -> None:
    """Write who holds the lock, for the message of the next command that waits (a reader
    joins the readers already named)."""
    line = (describe() + "\n").encode("utf-8", "replace")
    if shared and os.fstat(fd).st_size:
        os.lseek(fd, 0, os.SEEK_END)
    else:
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, line)


def _holder(fd: int) -> str:
    """The holders as they wrote themselves down (the first and a count of the rest)."""
    try:
        text = os.pread(fd, 4096, 0).decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[0] + (f" and {len(lines) - 1} more" if len(lines) > 1 else "") if lines else ""


def _release(path: Path, fd: int) -> None:
    """Let go; the last holder (the only one that can take it exclusively now) removes the file."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if _same_file(fd, path):
            os.unlink(path)
    except OSError:
        pass  # another reader still holds it: it removes the file when it lets go
    finally:
        os.close(fd)
