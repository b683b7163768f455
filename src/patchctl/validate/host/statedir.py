"""The user's private folder of node temp dirs (Ray's ``--temp-dir``) on a cluster host.

Kept apart from procs.py (which processes are ours): this module only makes and names the
folders; deciding that a folder's processes are gone, and so that it may go, is procs.py's.
Ray makes the temp dirs it fills 0777, and its socket paths must fit the kernel's limit, so the
folders live in one short, per-user 0700 folder rather than wherever ``TMPDIR`` points.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import stat
import tempfile
import time

#: the user's private folder holding every node temp dir (Ray's --temp-dir) of every run
ROOT_PREFIX = "pcv-"
#: what Ray appends to its temp dir for its longest socket path
#: (``/session_YYYY-MM-DD_HH-MM-SS_ffffff_PID/sockets/plasma_store``, a 7-digit pid)
RAY_SOCKET_TAIL = 66
#: the kernel's limit on a unix socket path (sun_path), terminating NUL included
SUN_PATH = 108
#: the file in a node's temp dir that says when it was made
BORN = "patchctl-born"


class PrivateStateRefused(Exception):
    """The private folder is not ours to use (a link, another owner's, not a folder)."""


def state_root() -> str:
    """``/tmp/pcv-UID``: short (Ray's socket paths live below it) and one per user."""
    base = "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()  # noqa: S108 - per user, made 0700 below
    return os.path.join(base, f"{ROOT_PREFIX}{os.getuid()}")


def private_root() -> str:
    """The user's private folder, created 0700 or checked: a real folder (not a link) owned by us.

    Ray makes the temp dirs it fills 0777 without the sticky bit (``sockets/``, ``logs/``,
    ``runtime_resources/``), so privacy must come from a parent others cannot enter.
    """
    path = state_root()
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        raise PrivateStateRefused(f"{path} is not a folder of ours ({exc.strerror}); remove it and run again") from None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid():
            raise PrivateStateRefused(
                f"{path} belongs to uid {st.st_uid}, not to this user (uid {os.getuid()}); remove it and run again"
            )
        if stat.S_IMODE(st.st_mode) != 0o700:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)
    return path


def session_prefix(value: str) -> str:
    """The temp-dir name prefix of one node of one run (``value`` is its marker, ``run.node``)."""
    return value.replace(".", "-") + "-"


def make_session_dir(value: str) -> str:
    """A fresh temp dir for one node inside the private folder, short enough for Ray's sockets."""
    made = time.time()
    path = tempfile.mkdtemp(prefix=session_prefix(value), dir=private_root())
    if len(path.encode()) + RAY_SOCKET_TAIL >= SUN_PATH:
        os.rmdir(path)
        raise PrivateStateRefused(f"{path} is too long for Ray's socket paths ({SUN_PATH} bytes); use a shorter /tmp")
    with open(os.path.join(path, BORN), "w", encoding="ascii") as f:
        f.write(f"{made}\n")  # no process of the node is older: the sweep's proof (marked)
    return path


def born(path: str) -> float:
    """When the node's temp dir was made; 0 where it cannot be told (then no process is ruled out)."""
    try:
        with open(os.path.join(path, BORN), encoding="ascii") as f:
            return float(f.read().strip())
    except (OSError, ValueError):
        return 0.0


def lock_path(value: str) -> str:
    """The file a node's supervisor holds locked for its whole life (``value``: its marker).

    Named ``<run>-<node>.lock``: neither the sweep (folders only) nor ``session_dirs`` (the
    ``<run>-<node>-`` prefix) ever takes it for a temp dir."""
    return os.path.join(state_root(), value.replace(".", "-") + ".lock")


def hold(value: str) -> int:
    """Lock this node's file for the supervisor's life; the descriptor (the kernel drops the lock
    when the process ends, however it ends).

    ``reap`` waits on the same lock: a supervisor still busy starting Ray when patchctl gave up
    would otherwise start it after reap had looked, and leave it running past the teardown."""
    private_root()
    fd = os.open(lock_path(value), os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def release(value: str, fd: int) -> None:
    """Remove the lock file, then let go (a waiting ``reap`` then sees the supervisor has ended)."""
    with contextlib.suppress(OSError):
        os.unlink(lock_path(value))
    os.close(fd)


def wait_released(value: str, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for the node's supervisor to end; True when it has (or never
    started here), False when it still holds its lock."""
    try:
        fd = os.open(lock_path(value), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return True
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.05)
    finally:
        os.close(fd)


def session_dirs(value: str) -> list[str]:
    return glob.glob(os.path.join(state_root(), session_prefix(value) + "*"))
