"""The tree as git sees it: exactly the files ``migrate`` sends, with their sha256.

Git answers which files belong (tracked, plus untracked files it does not ignore) because
gitignore semantics — anchoring, ``!`` negation, nested ``.gitignore`` files, tracked files
that match an ignore rule — cannot be reproduced with rsync filter rules. To that come the
files the applied patchsets added, the apply record, and what the cluster config includes;
outputs (checkpoints, logs, ...) are left behind unless included.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from patchctl import git, journal
from patchctl.clusters import Cluster
from patchctl.errors import PatchctlError
from patchctl.migrate import agent_cache, agent_files, agent_seal
from patchctl.migrate.errors import NotAGitTree
from patchctl.migrate.exclusions import included_files
from patchctl.migrate.listing import Listing
from patchctl.migrate.treewalk import Walked, walk_paths
from patchctl.patchsets import record as rec
from patchctl.remote import lock_agent

#: files at least this large are hashed on worker threads (see _hashed)
BIG = 1 << 20
#: files patchctl writes on each host itself; the source's copies (if any) never travel
HOST_FILES = (
    ".patchctl/env.sh",
    ".patchctl/provenance.json",
    ".patchctl/manifest.json",
    lock_agent.SESSION,
    lock_agent.TRANSFER,
    agent_files.CACHE,
    agent_seal.SEAL,
)
#: the debris of a write cut off here (temp files, the journal that rolls it back): it belongs to
#: this tree's next patchctl command, never to a host, whatever git or include say
DEBRIS_SUFFIX = journal.TMP_SUFFIX
DEBRIS_DIRS = (journal.JOURNAL_DIR, ".patchctl/journal")
#: path prefixes never sent: git's own folder and the debris folders
PASSED_OVER = (".git/", *DEBRIS_DIRS)


class Entry(NamedTuple):
    """One file to send. A named tuple, not a dataclass: 100k of them are built on every run, and
    a frozen dataclass costs twice as much to build (and its manifest row is a slice here)."""

    path: str
    #: "f" for a regular file, "l" for a symbolic link
    kind: str
    #: sha256 hex of a file's content, or a link's target
    digest: str
    executable: bool
    #: not in the manifest: its rows are the first four fields (``entry[:4]``, see provenance)
    size: int


@dataclass(frozen=True)
class FileSet:
    root: Path
    entries: tuple[Entry, ...]
    #: HEAD of the repository the tree is in
    commit: str | None
    #: paths that differ from HEAD (modified, added, untracked): the tree is commit + these
    changed: tuple[str, ...]

    @property
    def paths(self) -> list[str]:
        return [e.path for e in self.entries]

    @property
    def size(self) -> int:
        return sum(e.size for e in self.entries)


def _hashed(walked: Walked, cache: Any) -> list[Entry]:
    """An entry per walked file with its sha256: the cache's (see hashcache) where the stat is the
    one remembered, else read. Source files are hashed inline, as their entry is made: for a verl
    tree (~400 files of ~10 kB) handing each to a thread cost twice the CPU and wall time of
    hashing it. Large files (included outputs, data) go to worker threads, where hashlib releases
    the GIL and disks work in parallel."""
    base = os.path.join(walked.root, "")  # joined by hand below: os.path.join cost 2 us a file
    record_for, fill, links = cache.record_for, cache.fill, walked.links
    out: list[Entry] = []
    late: dict[int, list[Any]] = {}  # entry index -> the file's cache record
    for path, st in walked.stat_rows():
        if path in links:
            out.append(Entry(path, "l", links[path], False, 0))
            continue
        rec = record_for(path, st)
        digest = rec[4]
        if digest is None:
            if st.st_size >= BIG:
                late[len(out)] = rec
            else:
                # its tagged lines come from the same read (see Cache.fill): the tag inventory
                # (verify_remote.tags_request) does not open the file again
                digest = fill(rec, base + path)
        out.append(Entry(path, "f", digest or "", bool(st.st_mode & 0o100), st.st_size))
    if late:
        with ThreadPoolExecutor(max_workers=min(8, len(late))) as pool:
            digests = pool.map(lambda i: agent_cache.sha256(base + out[i].path), late)
            for (i, rec), digest in zip(late.items(), digests, strict=True):
                out[i] = out[i]._replace(digest=digest)
                rec[4] = digest
    return out


def walk(
    root: Path,
    cluster: Cluster,
    generated: tuple[str, ...] = (),
    asked: Listing | None = None,
) -> Walked:
    """The files to send from ``root`` to the cluster, stat'ed; raises if a tracked file would be
    left out. ``generated`` are paths rendered per host (``git_ignore.py``): the source's copy
    stays home. ``asked``: git's answers about ``root``, asked earlier (see listing); None asks now."""
    asked = asked if asked is not None and asked.is_for(root) else Listing(root)
    try:
        listed = asked.files.result()
    except PatchctlError:
        if git.toplevel(root) is None:  # asked only when git failed: a tree's first question costs a git run
            raise NotAGitTree(root) from None
        raise
    record = rec.load(root)
    if record is not None:
        listed.setdefault(rec.RECORD_PATH, False)
        for e in record.entries:
            if e.sha256_before is None and (root / e.path).is_file():
                listed.setdefault(e.path, False)  # added by a patchset: sent even where git ignores it
    for path in included_files(root, cluster):
        listed.setdefault(path, False)
    return walk_paths(root, listed, cluster, {*HOST_FILES, *generated, ".git"}, PASSED_OVER, DEBRIS_SUFFIX)


def changes(asked: Listing) -> tuple[str | None, tuple[str, ...]]:
    """HEAD and the paths that differ from it (modified, added, untracked), from git's answers."""
    listed = asked.files.result()
    untracked = [p for p, tracked in listed.items() if not tracked]
    # untracked comes in git's order, one sorted run that sorted() merges in linear time (a set
    # first would shuffle 100k paths); a path git stopped tracking but left on disk is in both
    changed = tuple(sorted([*set(asked.changed.result()).difference(untracked), *untracked]))
    return asked.head.result(), changed


def hashed(walked: Walked, cache: Any, head: tuple[str | None, tuple[str, ...]]) -> FileSet:
    """The walked files with their sha256: the cache's where it knows the file (see hashcache),
    read otherwise. ``head``: HEAD and the paths that differ from it (``changes``)."""
    entries = tuple(_hashed(walked, cache))
    return FileSet(walked.root, entries, *head)


def collect(
    root: Path,
    cluster: Cluster,
    generated: tuple[str, ...] = (),
    cache: Any = None,
    on_listed: Callable[[list[str]], None] | None = None,
    asked: Listing | None = None,
) -> FileSet:
    """The files to send from ``root`` to the cluster, with their sha256 (``walk``, then ``hashed``).

    ``cache``: digests remembered from earlier runs (see hashcache); None reads every file.
    ``on_listed``: given the paths once they are known and checked, before any file is hashed,
    so that a first transfer starts while the files are still read here.
    """
    asked = asked if asked is not None and asked.is_for(root) else Listing(root)
    walked = walk(root, cluster, generated, asked)
    if on_listed is not None:
        on_listed(walked.paths)
    return hashed(walked, cache or agent_cache.Cache({}, None, 0), changes(asked))
