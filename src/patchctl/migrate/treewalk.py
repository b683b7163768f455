"""The source's walk: git's paths tested and stat'ed in one pass, each folder's rules decided once.

Every migrate walks the whole tree, and on a no-change re-run the walk is most of the source's
work (a 100k-file tree: ~0.2 s of ``lstat`` calls alone). So what can be decided per folder is:
the folders never sent (``.git/``, the journals), the files patchctl writes on each host, the
output directories. Only the debris suffix and the cluster's include/exclude patterns (which may
name files) are asked per path. Each folder is opened once, relative to its parent and without
following a link, and its files are ``lstat``'ed relative to it: a folder swapped for a link is
not walked through (git calls its files deleted too), so no file outside the tree is sent.

A file's stat is kept as its five fields packed (``FIELDS``), 40 bytes, not the ``stat_result``
(~0.6 kB with its fields): the seal hashes them as they are, and 100k files x 8 hosts stay small.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from patchctl.clusters import Cluster
from patchctl.migrate.agent_seal import in_64_bits
from patchctl.migrate.errors import TrackedFileLeftOut
from patchctl.migrate.exclusions import excluded, in_output_dir

#: the stat fields a walked file is known by, packed in native order (the seal is never read elsewhere)
FIELDS = struct.Struct("=QqqqQ")  # mode, size, mtime_ns, ctime_ns (before 1970: negative), inode
#: a folder opened only to stat its files (O_PATH: no read permission needed, as for lstat of a path)
_ROOT = os.O_DIRECTORY | os.O_CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)
#: a folder below the root: never through a link
_FOLDER = _ROOT | os.O_NOFOLLOW
#: a folder that is not one (gone, a file, a link): its files are not on disk, as git would say
_NOT_A_FOLDER = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)
_UNOPENED = -1  # a folder met, not opened yet: only one with a file to stat is
_UNSENDABLE = "a submodule or special file, which migrate does not send"


class Stat(NamedTuple):
    """A walked file's fields under ``os.stat_result``'s names: what the hash cache compares."""

    st_mode: int
    st_size: int
    st_mtime_ns: int
    st_ctime_ns: int
    st_ino: int


@dataclass(frozen=True)
class Walked:
    """The files to send, listed and stat'ed, not yet hashed (see fileset.walk)."""

    root: Path
    #: the files' paths, in order
    paths: list[str]
    #: each file's ``FIELDS``, in the order of ``paths``
    stats: bytes
    #: the target of each symbolic link among them
    links: dict[str, str]

    def stat_rows(self) -> Iterator[tuple[str, Stat]]:
        """Each path with its stat fields."""
        return zip(self.paths, map(Stat._make, FIELDS.iter_unpack(self.stats)), strict=True)

    def newest(self) -> int:
        """The latest mtime or ctime of any file (0 without files), read from the packed fields."""
        fields = memoryview(self.stats).cast("q")  # FIELDS are all 8 bytes, in native order
        return max(max(fields[2::5], default=0), max(fields[3::5], default=0))


class _Folders:
    """The folders along the walk's current path, open. git's paths come sorted, so a folder's
    subtree is one run of them: a stack of open folders as deep as the tree is enough."""

    def __init__(self, root: Path) -> None:
        self.stack = [("", os.open(root, _ROOT))]  # the root itself may be reached through a link

    def fd(self, folder: str) -> int | None:
        """``folder`` open, or None where it is not a folder on disk (missing, a file, a link)."""
        stack = self.stack
        while len(stack) > 1 and not (folder == stack[-1][0] or folder.startswith(stack[-1][0] + "/")):
            os.close(stack.pop()[1])
        top = stack[-1][0]
        rest = folder[len(top) + 1 :] if top else folder
        for part in rest.split("/") if rest else ():
            if part in ("", ".", ".."):  # not a path git or a record gives: never a way out of the tree
                return None
            try:
                fd = os.open(part, _FOLDER, dir_fd=stack[-1][1])
            except OSError as e:
                if e.errno in _NOT_A_FOLDER:
                    return None
                raise
            stack.append((f"{stack[-1][0]}/{part}" if stack[-1][0] else part, fd))
        return stack[-1][1]

    def close(self) -> None:
        for _, fd in self.stack:
            os.close(fd)
        self.stack.clear()


def _hidden(folder: str, skip: set[str], passed_over: tuple[str, ...]) -> tuple[bool, frozenset[str], tuple[str, ...]]:
    """What stays home in ``folder`` whatever git or include say: all of it (a passed-over
    folder), the names of ``skip`` in it, and the name prefixes of ``passed_over`` that reach
    into it (a prefix is a path prefix: ``.patchctl-journal`` hides ``.patchctl-journal.x`` too)."""
    head = folder + "/" if folder else ""
    if head and head.startswith(passed_over):
        return True, frozenset(), ()
    names = frozenset(p[len(head) :] for p in skip if p.startswith(head) and "/" not in p[len(head) :])
    prefixes = tuple(p[len(head) :] for p in passed_over if p.startswith(head) and "/" not in p[len(head) :])
    return False, names, prefixes


def walk_paths(
    root: Path, listed: dict[str, bool], cluster: Cluster, skip: set[str], passed_over: tuple[str, ...], debris: str
) -> Walked:
    """One pass over git's paths in order (a pass per step cost each of 100k paths a list slot and
    a call per step), each path tested against its folder's rules and stat'ed: the files to send.
    ``listed``: path -> tracked; a tracked file left out raises (TrackedFileLeftOut)."""
    patterned = bool(cluster.include or cluster.exclude)
    lstat, readlink, pack, is_reg, is_lnk = os.lstat, os.readlink, FIELDS.pack, stat.S_ISREG, stat.S_ISLNK
    paths: list[str] = []
    stats = bytearray()
    links: dict[str, str] = {}
    left_out: list[tuple[str, str]] = []
    folders = _Folders(root)
    current: str | None = None
    fd: int | None = _UNOPENED
    why: str | None = None
    gone, names = False, frozenset[str]()
    prefixes: tuple[str, ...] = ()
    try:
        for path in sorted(listed):
            folder, _, name = path.rpartition("/")
            if folder != current:
                current, fd = folder, _UNOPENED
                gone, names, prefixes = _hidden(folder, skip, passed_over)
                why = None if patterned else in_output_dir(folder)
            if gone or name in names or name.endswith(debris) or (prefixes and name.startswith(prefixes)):
                continue  # never sent, whatever git or include say
            if patterned:
                why = excluded(path, cluster)
            if why is not None:
                if listed[path]:
                    left_out.append((path, why))
                continue
            if fd == _UNOPENED:
                fd = folders.fd(folder)
            if fd is None:  # its folder is gone, a file or a link: a deletion, as git says
                continue
            try:
                st = lstat(name, dir_fd=fd)
            except FileNotFoundError:  # a tracked file deleted here: a deletion, not an entry
                continue
            mode = st.st_mode
            if not is_reg(mode):
                if not is_lnk(mode):
                    if listed[path]:
                        left_out.append((path, _UNSENDABLE if stat.S_ISDIR(mode) else "not a file"))
                    continue
                links[path] = readlink(name, dir_fd=fd)
            paths.append(path)
            try:
                stats += pack(mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            except struct.error:  # a time past 2262 or before 1678 (utime sets one): clamped
                stats += pack(mode, st.st_size, in_64_bits(st.st_mtime_ns), in_64_bits(st.st_ctime_ns), st.st_ino)
    finally:
        folders.close()
    if left_out:
        raise TrackedFileLeftOut(left_out, cluster.name, cluster.source)
    return Walked(root, paths, bytes(stats), links)
