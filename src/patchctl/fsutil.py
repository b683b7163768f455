"""Atomic, all-or-nothing file writes and content hashing."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from patchctl import journal
from patchctl.confine import relative_inside, resolve_inside
from patchctl.errors import WriteFailed
from patchctl.oserrors import PERMISSIONS, describe


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


def _write_temp(tmp: Path, data: bytes, mode: int) -> None:
    journal.step()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
    except BaseException as exc:
        os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:  # write() names no file: the message must
            exc.filename = str(tmp)
        raise


def write_all(
    root: Path,
    changes: Mapping[str, FileChange] | list[FileChange],
    *,
    command: str = "write",
    before_commit: Callable[[], None] | None = None,
) -> None:
    """Write every change or none, even across ``kill -9`` (see :mod:`patchctl.journal`).

    Checks come first and write nothing. Then a journal names what is about to happen, the new
    contents are staged beside their destinations (so ``os.replace`` stays on one file system),
    the old files are hard-linked into the journal and the new ones swapped in. ``before_commit``
    (a git commit, say) runs last; if it or any step fails, or a signal arrives, every file is
    put back. A process killed outright leaves the journal for the next command to act on.
    """
    items = list(changes.values()) if isinstance(changes, Mapping) else list(changes)
    if not items:
        return
    plan = _check(root, items)
    jr = journal.begin(root, command)
    try:
        _stage(jr, plan)
        jr.state = "swapping"
        jr.save()
        for op in jr.ops:
            _swap(jr, op)
        if before_commit is not None:
            before_commit()
        jr.state = "done"
        jr.save()
    except BaseException as exc:
        journal.rollback(jr)
        if isinstance(exc, OSError):
            cause, fix = describe(exc, needed=sum(len(p.content or b"") for p in plan))
            # a temp file's name means nothing to the user: name the file it was for
            where = next(
                (root / op.path for op in jr.ops if op.tmp and str(root / op.tmp) == exc.filename), exc.filename or root
            )
            raise WriteFailed(where, cause, fix) from exc
        raise
    with journal.signals_held():  # past the commit point: a signal now waits until the clean-up is done
        journal.finish(jr)


@dataclass(frozen=True)
class _Planned:
    rel: str
    content: bytes | None
    mode: int
    existed: bool
    #: missing parent folders, outermost first
    missing: tuple[str, ...]


def _check(root: Path, items: list[FileChange]) -> list[_Planned]:
    """Everything that can be known to fail before a byte is written."""
    real_root = root.resolve()
    out: list[_Planned] = []
    seen: dict[str, str] = {}
    for ch in items:
        real = resolve_inside(root, ch.path, follow_last=ch.content is not None)
        rel = real.relative_to(real_root).as_posix()
        if rel in seen:
            raise WriteFailed(
                root / ch.path,
                f"it is the same file as {seen[rel]} (a symlink)",
                "leave one of the two patches out with --only",
            )
        seen[rel] = ch.path
        dest = real_root / rel
        if os.path.lexists(dest) and (dest.is_dir() and not dest.is_symlink()):
            raise WriteFailed(dest, "a directory is in the way", "move it away and retry")
        exists = os.path.lexists(dest)
        # mode bits, not just access(): root may write anything, but a file someone made
        # read-only is a statement that it must not change
        if exists and not dest.is_symlink() and (not os.access(dest, os.W_OK) or not dest.stat().st_mode & 0o222):
            raise WriteFailed(dest, "the file is read-only", PERMISSIONS)
        missing = [p for p in [dest.parent, *dest.parent.parents] if not p.exists() and real_root in p.parents]
        parent = next(p for p in [dest.parent, *dest.parent.parents] if p.exists())
        if not os.access(parent, os.W_OK):
            raise WriteFailed(dest, "its directory is read-only", PERMISSIONS)
        if ch.content is None:
            mode = 0
        elif ch.mode is not None:
            mode = ch.mode
        else:
            mode = dest.stat().st_mode & 0o7777 if exists else 0o644
        out.append(
            _Planned(
                rel, ch.content, mode, exists, tuple(p.relative_to(real_root).as_posix() for p in reversed(missing))
            )
        )
    return out


def _stage(jr: journal.Journal, plan: list[_Planned]) -> None:
    """Name everything in the journal first, then make it: a kill in between leaves nothing unnamed."""
    for i, p in enumerate(plan):
        jr.ops.append(
            journal.Op(p.rel, journal.temp_name(jr, p.rel) if p.content is not None else None, f"backup/{i}", p.existed)
        )
        jr.dirs += [d for d in p.missing if d not in jr.dirs]
    jr.save()
    for d in jr.dirs:
        if not (jr.root / d).exists():
            journal.step()
            (jr.root / d).mkdir()
    if any(op.existed for op in jr.ops):
        journal.step()
        (jr.folder / "backup").mkdir(exist_ok=True)
    for p, op in zip(plan, jr.ops, strict=True):
        if op.tmp is not None and p.content is not None:
            _write_temp(jr.root / op.tmp, p.content, p.mode)


def _swap(jr: journal.Journal, op: journal.Op) -> None:
    dest, backup = jr.root / op.path, jr.folder / op.backup
    if op.existed:
        journal.step()
        try:
            os.link(dest, backup, follow_symlinks=False)
        except OSError:  # another file system, or links not supported: a copy will do
            import shutil  # here, as below: shutil loads zlib, bz2 and lzma (see journal)

            shutil.copy2(dest, backup, follow_symlinks=False)
    journal.step()
    if op.tmp is None:
        dest.unlink()
    else:
        os.replace(jr.root / op.tmp, dest)


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_FRESH = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def write_into(folder: Path, rel: str, data: bytes) -> Path:
    """Write ``folder/rel`` as a fresh file, never through a link already there (issue 41 req 4).

    For the folders a user names (``validate --out``, ``retire --out``, train's run directory,
    ``capture --out``): a symlink planted there (``validate.json -> ~/.bashrc``) must not carry
    patchctl's write outside. The bytes go to a new file (``O_EXCL | O_NOFOLLOW``) beside the
    destination, which ``os.replace`` then swaps in: a link at ``rel`` is replaced, as git
    replaces one on checkout, never followed, and a reader sees the old file or the new one.
    """
    with open_into(folder, rel) as f:
        f.write(data)
    return folder / rel


@contextlib.contextmanager
def open_into(folder: Path, rel: str, *, stream: bool = False) -> Iterator[BinaryIO]:
    """:func:`write_into` as an open file. ``stream``: put in place at once, for a log that a user
    follows (``tail -f``) while it grows; else swapped in when the block ends without an error.

    ``rel`` may name sub-folders (``assets/data.parquet``): each is made when missing and opened
    without following a link (one there is refused); ``folder`` itself is the user's to point
    anywhere. Failures are :class:`WriteFailed` naming ``folder/rel``; nothing is left behind.
    """
    dest = folder / rel
    problem = relative_inside(rel)
    if problem:
        raise WriteFailed(dest, f"the name {rel!r} {problem}", "name a file inside the folder")
    *subs, name = rel.split("/")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        dfd = _descend(folder, subs)
    except OSError as exc:
        raise _failed(dest, exc) from exc
    tmp, placed = "", False
    try:
        try:
            tmp, fd = _fresh(dfd, name)
            f = os.fdopen(fd, "wb")
            if stream:
                os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
                placed = True
        except OSError as exc:
            raise _failed(dest, exc) from exc
        with f:
            yield f
            try:
                if not stream:
                    if not f.closed:  # a wrapper the caller closed has flushed it
                        f.flush()
                        os.fsync(f.fileno())  # the new bytes on disk before the old file goes
                    os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
                    placed = True
            except OSError as exc:
                raise _failed(dest, exc) from exc
    finally:
        if tmp and not placed:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
        os.close(dfd)


def renew_folder(path: Path) -> Path:
    """``path`` made a new, empty folder: for a folder of patchctl's own inside a user-named one
    (a run's ``assets/``, ``codehook/``), whose files builders and hooks then write by name. What
    was there goes: a link is removed, never followed, an old folder deleted (``rmtree`` follows
    no link inside it), so nothing written there later lands outside (issue 41 req 4)."""
    try:
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            path.unlink()
        elif path.exists():
            import shutil

            shutil.rmtree(path)
        path.mkdir(parents=True)  # the folders above are the user's to name
    except OSError as exc:
        raise _failed(path, exc) from exc
    return path


def _descend(folder: Path, subs: list[str]) -> int:
    """An fd of ``folder/subs...``: the sub-folders made when missing, none reached through a link."""
    fd = os.open(folder, _DIR)
    try:
        for i, part in enumerate(subs):
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o777, dir_fd=fd)
            try:
                inner = os.open(part, _DIR | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                raise WriteFailed(
                    folder.joinpath(*subs[: i + 1]),
                    "it is a symbolic link or a file, and patchctl writes through no link",
                    "remove it, or name another folder",
                ) from None
            os.close(fd)
            fd = inner
        return fd
    except BaseException:
        os.close(fd)
        raise


def _fresh(dfd: int, name: str) -> tuple[str, int]:
    """A new hidden file beside ``name`` that nobody else can have made or linked (its name cut
    short: a destination of 250 bytes must still leave room for the temp file's)."""
    while True:
        tmp = f".{name[:64]}.{os.urandom(6).hex()}.part"  # secrets.token_hex(6), without its hmac import
        with contextlib.suppress(FileExistsError):
            return tmp, os.open(tmp, _FRESH, 0o666, dir_fd=dfd)  # 0o666: the umask decides, as for any file


def _failed(dest: Path, exc: OSError) -> WriteFailed:
    if exc.errno == errno.EISDIR:
        return WriteFailed(dest, "a folder is in the way", "move it away and retry")
    exc.filename = str(dest)  # a temp file's or a relative name means nothing to the user
    cause, fix = describe(exc)
    return WriteFailed(dest, cause, fix)
