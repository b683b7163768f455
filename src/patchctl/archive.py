"""Unpacking an archive as data: plain files, folders and links that stay inside, nothing else.

tarfile's ``data`` filter exists only from Python 3.10.12 and 3.11.4: Debian 12's own 3.11.2
has none, and its plain ``extractall`` kept the archive's owners (bytedance, tiger), which git
then refused as "dubious ownership" when patchctl ran as root (#39). So one routine here reads
tar and zip archives member by member on every Python, and behaves the same on all of them:

- every member is checked from its header before anything is written: names that are absolute
  or climb out with ``..``, links that lead out, devices and FIFOs are refused, and so is an
  archive of more than :data:`MAX_MEMBERS` members or :data:`MAX_BYTES` bytes unpacked (a 1 MiB
  archive can hold 1 GiB of zeros); the bytes are counted again while they are written;
- version-control and patchctl folders (``.git``, ``.hg``, ``.svn``, ``.patchctl*``) are
  dropped: an archive's ``.git/config`` could set ``core.fsmonitor`` and its
  ``.git/hooks/pre-commit`` would run at the tree's first commit (#41);
- patchctl writes the files itself: mode 0644, or 0755 where the archive gives any x bit, owned
  by whoever runs it; owners, times and special bits are never taken from the archive;
- hard links are written as copies of the file they name; symlinks are made last, once every
  file is in place, and each must still resolve inside the tree on disk (a link through
  another link can leave a tree that each link, read alone, stays in);
- everything lands in a staging folder inside ``into`` and moves into place only when the
  whole archive passed, so a refusal leaves ``into`` as it was.

This module imports nothing of patchctl but its errors, so any Python can run it alone.
"""

from __future__ import annotations

import errno
import lzma
import os
import posixpath
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from patchctl.errors import ArchiveTooLarge, BadArchive, UnsafeArchive

#: the most bytes an archive may unpack to (verl's sdists: 6 MB; a checkout's git archive: 20 MB)
MAX_BYTES = 512 << 20
#: the most members an archive may hold (verl's sdists: ~600; a checkout: ~2000)
MAX_MEMBERS = 50_000
#: folders never unpacked, at any depth (compared in lower case): see the module's docstring
DROPPED = (".git", ".hg", ".svn")
DROPPED_PREFIX = ".patchctl"
#: the longest symlink target a zip member may hold (its content is the target)
LINK_MAX = 4096
CHUNK = 1 << 16
#: what reading a damaged archive raises, by format and compression (OSError: gzip's BadGzipFile)
#: why a member that passed the checks may still not be written: the archive's fault, not the machine's
UNWRITABLE = (errno.EEXIST, errno.ENOTDIR, errno.EISDIR, errno.ENAMETOOLONG)
CORRUPT = (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, lzma.LZMAError, NotImplementedError, OSError)


@dataclass(frozen=True)
class Raw:
    """A member as its archive describes it, before any check."""

    name: str
    #: "file", "dir", "symlink", "hardlink", or "special" (refused, with ``problem``)
    kind: str
    size: int
    mode: int
    #: a link's target, as written
    link: str
    #: the reader's own object (TarInfo, ZipInfo) to open the bytes with
    handle: Any
    problem: str = ""


@dataclass(frozen=True)
class Member:
    """A member that passed the checks: where it goes and what it is."""

    #: relative, '/'-separated, without empty, '.' or '..' parts
    name: str
    kind: str
    #: bytes it writes (a hard link: those of the file it names)
    size: int
    executable: bool
    #: a symlink's target as written; a hard link's file, normalized like ``name``
    link: str
    handle: Any


def _normalized(archive: Path, raw: str) -> str | None:
    """``raw`` as a plain relative path; None for the archive's own ``.`` entry."""
    if raw.startswith("/"):
        raise UnsafeArchive(archive, raw, "is an absolute path")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchive(archive, raw, "climbs out of the folder with ..")
    return "/".join(parts) or None


def _dropped(name: str) -> bool:
    return any(p.lower() in DROPPED or p.lower().startswith(DROPPED_PREFIX) for p in name.split("/"))


def _tar_kind(info: tarfile.TarInfo) -> str:
    if info.isreg():
        return "file"
    if info.isdir():
        return "dir"
    if info.issym():
        return "symlink"
    return "hardlink" if info.islnk() else "special"


def _tar_members(archive: Path, tar: tarfile.TarFile) -> Iterator[Raw]:
    """One header at a time: the caller checks each before the next is read (and the data
    before it skipped, which for a compressed archive means decompressed)."""
    while True:
        try:
            info = tar.next()
        except CORRUPT as exc:
            raise BadArchive(archive, f"is corrupt or truncated ({exc})") from None
        if info is None:
            return
        kind = _tar_kind(info)
        problem = "is a device, FIFO or other special file" if kind == "special" else ""
        yield Raw(info.name, kind, info.size if kind == "file" else 0, info.mode, info.linkname, info, problem)


def _zip_members(archive: Path, zf: zipfile.ZipFile) -> Iterator[Raw]:
    for info in zf.infolist():
        mode = info.external_attr >> 16
        kind = {stat.S_IFREG: "file", stat.S_IFDIR: "dir", stat.S_IFLNK: "symlink"}.get(stat.S_IFMT(mode), "special")
        if not stat.S_IFMT(mode):  # made without Unix modes: the name says which it is
            kind = "dir" if info.is_dir() else "file"
        problem = "is a device, FIFO or other special file" if kind == "special" else ""
        if info.flag_bits & 0x1:
            kind, problem = "special", "is encrypted"
        link = ""
        if kind == "symlink":  # a zip link's target is its content
            with zf.open(info) as f:
                target = _read(archive, info.filename, f, LINK_MAX + 1)
            if len(target) > LINK_MAX:
                kind, problem = "special", f"is a link of more than {LINK_MAX} bytes"
            link = target.decode("utf-8", "surrogateescape")
        yield Raw(info.filename, kind, info.file_size if kind == "file" else 0, mode, link, info, problem)


def _read(archive: Path, name: str, src: IO[bytes], size: int = CHUNK) -> bytes:
    try:
        return src.read(size)
    except CORRUPT as exc:
        raise BadArchive(archive, f"is corrupt or truncated at member {name!r} ({exc})") from None


def _link_target(archive: Path, raw: Raw, name: str) -> str | None:
    """The symlink's target, or None when it points into a dropped folder; refused when it leaves the tree."""
    if not raw.link:
        raise UnsafeArchive(archive, raw.name, "is a link with no target")
    if raw.link.startswith("/"):
        raise UnsafeArchive(archive, raw.name, f"links to the absolute path {raw.link!r}")
    top = name.partition("/")[0]
    target = posixpath.normpath(posixpath.join(posixpath.dirname(name), raw.link))
    if target != top and not target.startswith(top + "/"):
        raise UnsafeArchive(archive, raw.name, f"links outside the tree ({raw.link!r})")
    return None if _dropped(target) else raw.link


def scan(archive: Path, raws: Iterator[Raw]) -> tuple[str, list[Member]]:
    """The archive's one top folder and the members to write, every header checked first."""
    members: list[Member] = []
    files: dict[str, int] = {}  # written so far: a hard link's size is its file's
    total = 0
    for count, raw in enumerate(raws, 1):
        if count > MAX_MEMBERS:
            raise ArchiveTooLarge(archive, f"holds more than {MAX_MEMBERS} members")
        name = _normalized(archive, raw.name)
        if raw.problem:
            raise UnsafeArchive(archive, raw.name, raw.problem)
        if name is None or _dropped(name):
            continue
        size, link = raw.size, raw.link
        if raw.kind == "symlink":
            kept = _link_target(archive, raw, name)
            if kept is None:
                continue
        elif raw.kind == "hardlink":
            link = "/".join(p for p in raw.link.split("/") if p not in ("", "."))
            if raw.link.startswith("/") or link not in files:
                raise UnsafeArchive(
                    archive, raw.name, f"links to {raw.link!r}, which is no file before it in the archive"
                )
            size = files[link]
        total += size
        if total > MAX_BYTES:
            raise ArchiveTooLarge(
                archive, f"unpacks to more than {MAX_BYTES >> 20} MiB (member {raw.name!r} is {size} bytes)"
            )
        if raw.kind in ("file", "hardlink"):
            files[name] = size
        members.append(Member(name, raw.kind, size, bool(raw.mode & 0o111), link, raw.handle))
    tops = {m.name.partition("/")[0] for m in members}
    if len(tops) != 1 or any(m.name in tops and m.kind != "dir" for m in members):
        raise BadArchive(archive)
    return tops.pop(), members


def _copy(archive: Path, member: Member, src: IO[bytes], path: str) -> None:
    """The member's bytes into a new file at ``path``, counted: never more than its header gave."""
    # no symlink exists yet and the staging folder is private (0700): the mode is set below
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "wb") as out:
        written = 0
        while chunk := _read(archive, member.name, src):
            written += len(chunk)
            if written > member.size:
                raise ArchiveTooLarge(archive, f"member {member.name!r} holds more than the {member.size} bytes listed")
            out.write(chunk)
        os.fchmod(out.fileno(), 0o755 if member.executable else 0o644)


def write(archive: Path, stage: Path, top: str, members: list[Member], opener: Callable[[Any], Any]) -> None:
    """Write the checked members under ``stage``: folders and files first, then the links."""
    base = str(stage)
    try:
        for m in members:
            path = os.path.join(base, m.name)
            if m.kind == "dir":
                os.makedirs(path, 0o755, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
            if m.kind == "file":
                with opener(m.handle) as src:
                    _copy(archive, m, src, path)
            elif m.kind == "hardlink":  # no links are made yet: nothing on this path is followed
                with open(os.path.join(base, m.link), "rb") as src:
                    _copy(archive, m, src, path)
        links = [m for m in members if m.kind == "symlink"]
        for m in links:
            os.symlink(m.link, os.path.join(base, m.name))
    except OSError as exc:  # two members of one name, a name or link too long for this file system
        if exc.errno not in UNWRITABLE:
            raise
        raise BadArchive(archive, f"member {m.name!r} cannot be written ({exc.strerror})") from None
    root = os.path.realpath(os.path.join(base, top))
    for m in links:
        real = os.path.realpath(os.path.join(base, m.name))
        if real != root and not real.startswith(root + os.sep):
            raise UnsafeArchive(archive, m.name, f"links outside the tree through another link ({m.link!r})")


def _open(archive: Path) -> tarfile.TarFile | zipfile.ZipFile:
    try:
        return zipfile.ZipFile(archive) if archive.suffix == ".zip" else tarfile.open(archive, "r:*")
    except CORRUPT as exc:
        raise BadArchive(archive, f"is not a readable archive ({exc})") from None


def _extract(archive: Path, stage: Path) -> str:
    with _open(archive) as opened:
        if isinstance(opened, zipfile.ZipFile):
            top, members = scan(archive, _zip_members(archive, opened))
            write(archive, stage, top, members, opened.open)
        else:
            top, members = scan(archive, _tar_members(archive, opened))
            write(archive, stage, top, members, opened.extractfile)
    return top


def unpack(archive: Path, into: Path) -> Path:
    """Extract a .tar(.gz)/.zip holding one top folder into ``into``; return that folder."""
    into.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(dir=into, prefix=".unpack-"))
    try:
        top = _extract(archive, stage)
        os.rename(stage / top, into / top)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return into / top
