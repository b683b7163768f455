"""The file operations of ``migrate``'s host agent (``remote_agent``): paths confined to the
root, the walk of the host's tree, atomic writes, deletions and the root's transfer lock.

Like the agent it is sent as source to each host (``verify_remote._agent_b64`` puts this file's
source between the hash cache's and the agent's), so it needs only python3 >= 3.6 and its
standard library and never imports patchctl.
"""

import operator
import os
import stat
import time

if False:  # typing only: the host's python3 may predate the typing module
    from typing import Any, Optional  # noqa: F401 - named in type comments only

# here, where patchctl is installed; on a host the source of agent_io has just run before this one
try:  # noqa: SIM105 - not contextlib.suppress: its import (functools, collections) is no sealed answer's
    from patchctl.migrate.agent_io import loads, temp_file
except ImportError:
    pass


MANIFEST = ".patchctl/manifest.json"
PROVENANCE = ".patchctl/provenance.json"
CACHE = ".patchctl/hashes.json"
TRANSFER_LOCK = ".patchctl/transfer.lock"  # remote/lock_agent.py's TRANSFER: rsync holds it too
SKIP_DIRS = {
    ".git",
    ".hg",
    ".patchctl",
    "__pycache__",
    ".venv",
    "node_modules",
    ".mypy_cache",
    ".pytest_cache",
    ".rsync-partial",
    ".~tmp~",
    "checkpoints",
    "outputs",
    "logs",
    "wandb",
}


_INSIDE = {}  # type: dict[tuple[str, str], bool]


def _folder_inside(root, folder):
    # type: (str, str) -> bool
    """Whether the folder ``folder`` (relative, "" for the root) stays inside ``root`` once
    symbolic links are followed, remembered: every file of a folder shares its answer, and a
    check of 100k files must not cost 100k realpath calls."""
    key = (root, folder)
    if key not in _INSIDE:
        if folder and any(p in ("", ".", "..") for p in folder.split("/")):
            _INSIDE[key] = False
        else:
            real_root = os.path.realpath(root)
            parent = os.path.realpath(os.path.join(root, folder)) if folder else real_root
            _INSIDE[key] = parent == real_root or parent.startswith(real_root + os.sep)
    return _INSIDE[key]


def inside(root, rel):
    # type: (str, str) -> Optional[str]
    """The absolute path of ``rel`` under ``root``, or None if it could leave the root."""
    folder, _, name = rel.rpartition("/")
    if rel.startswith("/") or name in ("", ".", "..") or not _folder_inside(root, folder):
        return None
    return os.path.join(root, rel)


def skipped(rel):
    # type: (str) -> bool
    return any(part in SKIP_DIRS for part in rel.split("/")[:-1])


MAX_OPEN = 32  # folders a walk holds open at once: its path from the root; a deeper one is reopened
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_SCANDIR_FD = os.scandir in os.supports_fd  # python >= 3.7; 3.6 lists a descriptor with listdir
_NAME = operator.attrgetter("name")


def survey(root):
    # type: (str) -> dict[str, os.stat_result]
    """Every entry of the tree that is not a folder (files, links), by path, with its ``lstat``, in
    one walk: the check's file stats and its tag walk come from this one pass (a stat per file,
    not two stats and two walks). Each folder's entries are taken in name order: the seal's
    digest sorts the paths and then reads their stats, twice as fast where the stats were made
    in about that order (a 100k tree's are ~20 MB: read scattered, each read waits for memory).

    Each folder is opened by its descriptor, relative to its parent's, without following a link
    (``O_NOFOLLOW``), and listed and stat'ed through it: a folder replaced by a symbolic link
    mid-walk is not entered (a path-based walk would follow it out of the root), and a stat is
    one ``fstatat`` of a name, not a lookup of the whole path (~9% less CPU at 100k files).
    Folders in SKIP_DIRS and symbolic links to folders are not entered, so every path listed
    stays inside the root; an unreadable folder is left out, as ``os.walk`` leaves it out; an
    entry gone mid-walk is skipped. At most MAX_OPEN + 1 descriptors are open at once, each
    closed whatever happens."""
    out = {}  # type: dict[str, os.stat_result]
    try:
        top = os.open(root.rstrip(os.sep) or os.sep, _DIR)  # the root itself may be a link
    except OSError:
        return out
    # a folder being walked: [its fd (None once closed for MAX_OPEN), prefix, folders to enter, names]
    frames = [[top, "", None, []]]  # type: list[list[Any]]
    try:
        while frames:
            frame = frames[-1]
            if frame[2] is None:
                frame[2] = _listing(frame[0], frame[1], out)
            if not frame[2]:
                if frame[0] is not None:
                    os.close(frame[0])
                frames.pop()
                continue
            name = frame[2].pop()
            if frame[0] is None:  # closed to keep MAX_OPEN: opened again, from the root down
                frame[0] = _reopen(top, frame[3])
                if frame[0] is None:  # gone or replaced meanwhile: the rest of it is left out
                    frames.pop()
                    continue
            try:
                fd = os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=frame[0])
            except OSError:  # unreadable, gone, or a link now: not entered
                continue
            frames.append([fd, frame[1] + name + "/", None, frame[3] + [name]])
            if len(frames) > MAX_OPEN + 1 and frames[-MAX_OPEN - 1][0] is not None:
                os.close(frames[-MAX_OPEN - 1][0])  # never the root's (frames[0]): MAX_OPEN + 1 >= 2
                frames[-MAX_OPEN - 1][0] = None
    finally:
        for frame in frames:
            if frame[0] is not None:
                os.close(frame[0])
    return out


def _listing(fd, prefix, out):
    # type: (int, str, dict[str, os.stat_result]) -> list[str]
    """Put the ``lstat`` of each entry of the open folder ``fd`` that is not a folder into ``out``,
    under ``prefix``, in name order; the names of its subfolders to enter, last first."""
    folders = []  # type: list[str]
    try:
        if _SCANDIR_FD:
            with os.scandir(fd) as listed:  # a copy of fd: each DirEntry.stat is an fstatat on fd
                entries = sorted(listed, key=_NAME)
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    if e.name not in SKIP_DIRS:
                        folders.append(e.name)
                    continue
                try:  # noqa: SIM105 - per file: suppress() would cost more than the stat's Python side
                    out[prefix + e.name] = e.stat(follow_symlinks=False)
                except OSError:  # gone since the folder was listed
                    pass
        else:
            for name in sorted(os.listdir(fd)):
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue
                if not stat.S_ISDIR(st.st_mode):
                    out[prefix + name] = st
                elif name not in SKIP_DIRS:
                    folders.append(name)
    except OSError:  # unreadable after all: what was listed stays
        pass
    folders.reverse()
    return folders


def _reopen(top, path):
    # type: (int, list[str]) -> Optional[int]
    """The folder ``path`` (its names from the root) opened again from the root's descriptor ``top``,
    one name at a time, never through a link; None when that fails."""
    fd = top
    try:
        for name in path:
            parent, fd = fd, os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=fd)
            if parent != top:
                os.close(parent)
    except OSError:
        if fd != top:
            os.close(fd)
        return None
    return fd


def read_json(path, default):
    # type: (str, Any) -> Any
    """The JSON in ``path``, or ``default``. Opened without blocking: a FIFO put in the place of a
    record (the host's file: anything may be there) reads as empty, not as a hang."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            return loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return default


def write_atomic(path, data):
    # type: (str, bytes) -> None
    """Temp file beside the destination, then rename: a reader never sees half a file."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = temp_file(os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_changed(path, data):
    # type: (str, bytes) -> None
    """``write_atomic``, unless ``path`` holds exactly ``data`` already: a no-change re-run
    rewrites none of the host's records (a link there is never read, and is replaced)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO there: no hang
        with os.fdopen(fd, "rb") as f:
            if f.read(len(data) + 1) == data:
                return
    except OSError:
        pass
    write_atomic(path, data)


def stale(root, req):
    # type: (str, dict[str, Any]) -> list[str]
    """Files an earlier migrate placed that the source no longer has, still present here."""
    placed = read_json(os.path.join(root, MANIFEST), {}).get("files", [])
    keep = set(e[0] for e in req["manifest"])
    out = []
    for rel in placed:
        full = inside(root, rel) if rel not in keep else None
        if full is not None and (os.path.islink(full) or os.path.isfile(full)):
            out.append(rel)
    return sorted(out)


def delete(root, paths):
    # type: (str, list[str]) -> None
    real_root = os.path.realpath(root)
    for rel in paths:
        full = inside(root, rel)
        if full is None:
            continue
        os.unlink(full)
        parent = os.path.dirname(full)
        while os.path.realpath(parent) != real_root:
            try:
                os.rmdir(parent)
            except OSError:
                break
            parent = os.path.dirname(parent)


def differs(root, rendered):
    # type: (str, dict[str, str]) -> list[str]
    out = []
    for rel, text in sorted(rendered.items()):
        full = inside(root, rel)
        if full is None:
            raise ValueError(f"{rel} leads out of the root")
        try:
            with open(full, "rb") as f:
                same = f.read() == text.encode("utf-8")
        except OSError:
            same = False
        if not same:
            out.append(rel)
    return out


def hold_transfer_lock(root):
    # type: (str) -> int
    """Hold the root's transfer lock until this process exits (see remote/lock_agent.py): a
    ``finish`` writes and records, and one still running for a killed migrate must end before a
    newer migrate looks at the root."""
    import fcntl

    os.makedirs(os.path.join(root, ".patchctl"), exist_ok=True)
    path = inside(root, TRANSFER_LOCK)
    if path is None:  # a .patchctl symlinked elsewhere on the host: nothing is made there
        raise ValueError(f"{root}/.patchctl leads out of the root; make it a folder there")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    deadline = time.monotonic() + 60
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{path} stayed held by another transfer for 60 s") from None
            time.sleep(0.05)
