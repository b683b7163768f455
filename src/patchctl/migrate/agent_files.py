"""The file operations of ``migrate``'s host agent (``remote_agent``): paths confined to the
root, the walk of the host's tree, atomic writes, deletions and the root's transfer lock.

Like the agent it is sent as source to each host (``verify_remote._agent_b64`` puts this file's
source between the hash cache's and the agent's), so it needs only python3 >= 3.6 and its
standard library and never imports patchctl.
"""

import json
import os
import tempfile
import time

if False:  # typing only: the host's python3 may predate the typing module
    from typing import Any, Optional  # noqa: F401 - named in type comments only


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


def survey(root):
    # type: (str) -> dict[str, os.stat_result]
    """Every entry of the tree that is not a folder (files, links), by path, with its ``lstat``, in
    one walk: the check's file stats and its tag walk come from this one pass (a stat per file,
    not two stats and two walks). Folders in SKIP_DIRS and symbolic links to folders are not
    entered, so every path listed stays inside the root; an unreadable folder is left out, as
    ``os.walk`` leaves it out."""
    out = {}  # type: dict[str, os.stat_result]
    stack = [(root.rstrip(os.sep) or os.sep, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for e in entries:
                    if e.is_dir(follow_symlinks=False):
                        if e.name not in SKIP_DIRS:
                            stack.append((e.path, prefix + e.name + "/"))
                        continue
                    try:  # noqa: SIM105 - per file: suppress() would cost more than the stat's Python side
                        out[prefix + e.name] = e.stat(follow_symlinks=False)
                    except OSError:  # gone since the folder was listed
                        pass
        except OSError:
            continue
    return out


def read_json(path, default):
    # type: (str, Any) -> Any
    """The JSON in ``path``, or ``default``. Opened without blocking: a FIFO put in the place of a
    record (the host's file: anything may be there) reads as empty, not as a hang."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            return json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return default


def write_atomic(path, data):
    # type: (str, bytes) -> None
    """Temp file beside the destination, then rename: a reader never sees half a file."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".patchctl-")
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
