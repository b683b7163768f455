"""The one mapping from an ``OSError`` to a cause and a fix a user can act on.

``strerror`` alone misleads: "No space left on device" does not say which device or how much
was needed, and a blanket "fix the permissions" sent users chmod-ing trees on a full disk.
Every place that turns an ``OSError`` into a message (the journaled write, the CLI's error
handler) asks :func:`describe`, so each errno is worded once.
"""

from __future__ import annotations

import errno
import os
import resource
from pathlib import Path

#: errnos that say something about the machine, not about patchctl: reported as the user's to fix
ENVIRONMENT = frozenset(
    {
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EFBIG,
        errno.ENOTDIR,
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
        errno.EIO,
        errno.ENAMETOOLONG,
        errno.EMFILE,
        errno.ENFILE,
        errno.ELOOP,
    }
)
PERMISSIONS = "fix the permissions and retry"


def size(n: int) -> str:
    """``512 bytes``, ``64.0 KiB``, ``1.5 GiB``."""
    if n < 1024:
        return f"{n} bytes"
    value, unit = n / 1024, "KiB"
    for bigger in ("MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{value:.1f} {unit}"


def mount_of(path: Path) -> tuple[Path, str]:
    """The mount point holding ``path`` and its file-system type ("" when /proc is not there)."""
    here = Path(os.path.abspath(path))
    while not os.path.ismount(here) and here != here.parent:
        here = here.parent
    fstype = ""
    try:
        with open("/proc/self/mounts", encoding="utf-8") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 2 and fields[1].replace("\\040", " ") == str(here):
                    fstype = fields[2]  # the last entry wins: it is the one mounted on top
    except OSError:
        pass
    return here, fstype


def _not_a_folder(path: Path) -> Path | None:
    """The first component of ``path`` that exists but is not a folder."""
    for parent in reversed(Path(os.path.abspath(path)).parents):
        if os.path.lexists(parent) and not parent.is_dir():
            return parent
    return None


def _disk_full(path: Path, needed: int | None) -> tuple[str, str]:
    mount, fstype = mount_of(path.parent if not path.exists() else path)
    try:
        st = os.statvfs(mount)
        free = f" has {size(st.f_bavail * st.f_frsize)} free"
    except OSError:
        free = ""
    what = f"{mount}" + (f" ({fstype})" if fstype else "")
    need = f", this change needs {size(needed)}" if needed is not None else ""
    return f"the disk is full: {what}{free}{need}", f"free space on {mount} and retry"


def _too_large() -> tuple[str, str]:
    limit, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if limit == resource.RLIM_INFINITY:
        return "the file is larger than its file system allows (EFBIG)", "put the tree on another file system"
    return (
        f"the file would exceed this process's file-size limit of {size(limit)} (ulimit -f)",
        "raise the limit (ulimit -f unlimited) and retry",
    )


def describe(exc: OSError, *, needed: int | None = None) -> tuple[str, str]:
    """(cause, fix) for ``exc``; ``needed``: the bytes the failed operation was writing, if known."""
    path = Path(exc.filename) if isinstance(exc.filename, (str, Path)) else Path(".")
    code = exc.errno
    if code in (errno.ENOSPC, errno.EDQUOT):
        cause, fix = _disk_full(path, needed)
        return (
            (cause.replace("the disk is full", "the disk quota is used up"), fix)
            if code == errno.EDQUOT
            else (cause, fix)
        )
    if code == errno.EFBIG:
        return _too_large()
    if code == errno.ENOTDIR:
        bad = _not_a_folder(path)
        return (
            f"{bad} is not a folder" if bad else "a part of the path is not a folder",
            "move that file away, or fix the path",
        )
    if code == errno.EROFS:
        return "the file system is mounted read-only", PERMISSIONS + " (remount it read-write)"
    if code in (errno.EACCES, errno.EPERM):
        return "permission denied", PERMISSIONS
    return exc.strerror or str(exc), "fix the cause and retry"
