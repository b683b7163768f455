"""Atomic, all-or-nothing file writes and content hashing."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from patchctl.errors import WriteFailed


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class FileChange:
    """The desired end state of one file. ``content`` None means the file is removed."""

    #: path relative to the root it is applied under
    path: str
    #: new bytes, or None to delete the file
    content: bytes | None
    #: permission bits for a created or rewritten file; None keeps the current mode
    mode: int | None = None


def _write_temp_beside(path: Path, data: bytes, mode: int) -> Path:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".patchctl-tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        os.unlink(tmp)
        raise
    return Path(tmp)


def write_all(root: Path, changes: Mapping[str, FileChange] | list[FileChange]) -> None:
    """Write every change or none.

    Phase one stages each new content in a temp file beside its destination (so ``os.replace``
    stays on one file system) and checks that deletions are possible; nothing visible changes.
    Phase two swaps them in, keeping the old bytes in memory; if any swap fails the ones
    already done are put back and the temp files removed.
    """
    items = list(changes.values()) if isinstance(changes, Mapping) else list(changes)
    staged: list[tuple[Path, Path | None, FileChange]] = []
    created_dirs: list[Path] = []
    try:
        for ch in items:
            dest = root / ch.path
            # mode bits, not just access(): root may write anything, but a file someone made
            # read-only is a statement that it must not change
            if dest.exists() and (not os.access(dest, os.W_OK) or not dest.stat().st_mode & 0o222):
                raise WriteFailed(dest, "the file is read-only")
            if ch.content is None:
                if not os.access(dest.parent, os.W_OK):
                    raise WriteFailed(dest, "its directory is read-only")
                staged.append((dest, None, ch))
                continue
            missing = [p for p in [dest.parent, *dest.parent.parents] if not p.exists()]
            for d in reversed(missing):
                d.mkdir()
                created_dirs.append(d)
            if not os.access(dest.parent, os.W_OK):
                raise WriteFailed(dest, "its directory is read-only")
            mode = ch.mode if ch.mode is not None else (dest.stat().st_mode & 0o7777 if dest.exists() else 0o644)
            staged.append((dest, _write_temp_beside(dest, ch.content, mode), ch))
    except OSError as exc:
        _discard(staged, created_dirs)
        raise WriteFailed(exc.filename or root, exc.strerror or str(exc)) from exc
    except BaseException:
        _discard(staged, created_dirs)
        raise

    done: list[tuple[Path, bytes | None, int | None]] = []
    try:
        for dest, tmp, _ch in staged:
            old = dest.read_bytes() if dest.exists() else None
            old_mode = dest.stat().st_mode & 0o7777 if dest.exists() else None
            if tmp is None:
                dest.unlink()
            else:
                os.replace(tmp, dest)
            done.append((dest, old, old_mode))
    except BaseException as exc:
        for dest, old, old_mode in reversed(done):
            if old is None:
                dest.unlink(missing_ok=True)
            else:
                dest.write_bytes(old)
                if old_mode is not None:
                    os.chmod(dest, old_mode)
        _discard(staged, created_dirs)
        if isinstance(exc, OSError):
            raise WriteFailed(exc.filename or root, exc.strerror or str(exc)) from exc
        raise
    _prune_empty_parents(root, [dest for dest, tmp, _ in staged if tmp is None])


def _discard(staged: list[tuple[Path, Path | None, FileChange]], created_dirs: list[Path]) -> None:
    for _dest, tmp, _ch in staged:
        if tmp is not None and tmp.exists():
            tmp.unlink()
    for d in reversed(created_dirs):
        try:
            d.rmdir()
        except OSError:
            pass


def _prune_empty_parents(root: Path, removed: list[Path]) -> None:
    """Remove directories emptied by deletions, up to (not including) ``root``."""
    root = root.resolve()
    for path in removed:
        parent = path.parent.resolve()
        while parent != root and root in parent.parents:
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent
