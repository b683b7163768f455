"""The tree as git sees it: exactly the files ``migrate`` sends, with their sha256.

Git answers which files belong (tracked, plus untracked files it does not ignore) because
gitignore semantics — anchoring, ``!`` negation, nested ``.gitignore`` files, tracked files
that match an ignore rule — cannot be reproduced with rsync filter rules. To that come the
files the applied patchsets added, the apply record, and what the cluster config includes;
outputs (checkpoints, logs, ...) are left behind unless included.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import os
import stat
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchctl import git, journal
from patchctl.clusters import Cluster
from patchctl.migrate import agent_cache, agent_files
from patchctl.migrate.errors import NotAGitTree, TrackedFileLeftOut
from patchctl.patchsets import record as rec
from patchctl.remote import lock_agent

#: directory names whose contents are run outputs: never sent unless the cluster includes them
OUTPUT_DIRS = ("checkpoints", "outputs", "logs", "wandb")
#: files at least this large are hashed on worker threads (see _entries)
BIG = 1 << 20
#: files patchctl writes on each host itself; the source's copies (if any) never travel
HOST_FILES = (
    ".patchctl/env.sh",
    ".patchctl/provenance.json",
    ".patchctl/manifest.json",
    lock_agent.SESSION,
    lock_agent.TRANSFER,
    agent_files.CACHE,
)
#: the debris of a write cut off here (temp files, the journal that rolls it back): it belongs to
#: this tree's next patchctl command, never to a host, whatever git or include say
DEBRIS_SUFFIX = journal.TMP_SUFFIX
DEBRIS_DIRS = (journal.JOURNAL_DIR, ".patchctl/journal")


@dataclass(frozen=True)
class Entry:
    path: str
    #: "f" for a regular file, "l" for a symbolic link
    kind: str
    #: sha256 hex of a file's content, or a link's target
    digest: str
    executable: bool
    size: int

    def as_manifest(self) -> list[object]:
        return [self.path, self.kind, self.digest, self.executable]


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


def is_debris(path: str) -> bool:
    """Whether ``path`` is an interrupted write's temp file or journal (see :mod:`patchctl.journal`)."""
    return path.endswith(DEBRIS_SUFFIX) or any(path == d or path.startswith(d) for d in DEBRIS_DIRS)


def _under(path: str, prefix: str) -> bool:
    prefix = prefix.strip("/")
    return path == prefix or path.startswith(prefix + "/") or fnmatch.fnmatchcase(path, prefix)


def _excluded(path: str, cluster: Cluster) -> str | None:
    """Why ``path`` stays behind, or None. Included paths always travel."""
    if any(_under(path, inc) for inc in cluster.include):
        return None
    for pattern in cluster.exclude:
        if _under(path, pattern):
            return f"matches clusters.{cluster.name}.exclude {pattern!r}"
    hit = _output_dir(path.rpartition("/")[0])
    return f"inside an output directory {hit}/" if hit else None


@functools.lru_cache(maxsize=4096)
def _output_dir(folder: str) -> str | None:
    """The first output directory among ``folder``'s parts: asked once per folder, not per file."""
    return next((d for d in folder.split("/") if d in OUTPUT_DIRS), None)


def _included_files(root: Path, cluster: Cluster) -> set[str]:
    """Files under the cluster's ``include`` paths, ignored by git or not."""
    out: set[str] = set()
    for inc in cluster.include:
        base = root / inc.strip("/")
        if base.is_file() or base.is_symlink():
            out.add(inc.strip("/"))
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d != ".git"]
            out.update(os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/") for f in filenames)
    return out


def _entry(base: str, path: str, cache: Any) -> Entry | str | None:
    """The entry for ``path`` under ``base`` (the root and a slash); None when it is gone from
    disk; a reason string when not sendable. A regular file the cache does not know gets an
    empty digest, for ``_hashed`` to fill in."""
    full = base + path  # not pathlib nor os.path.join: either costs more than the lstat, per file
    try:
        st = os.lstat(full)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return Entry(path, "l", os.readlink(full), False, 0)
    if stat.S_ISREG(st.st_mode):
        record = cache.record_for(path, st)
        return Entry(path, "f", record[4] or "", bool(st.st_mode & 0o100), st.st_size)
    return "a submodule or special file, which migrate does not send" if stat.S_ISDIR(st.st_mode) else "not a file"


def _hashed(root: Path, entries: list[Entry], cache: Any) -> list[Entry]:
    """``entries`` with the digests the cache (see hashcache) did not know filled in. Source files
    are hashed inline: for a verl tree (~400 files of ~10 kB) handing each to a thread cost twice
    the CPU and wall time of hashing it. Large files (included outputs, data) go to worker
    threads, where hashlib releases the GIL and disks work in parallel."""
    out = list(entries)
    late = {}
    for i, e in enumerate(entries):
        if e.kind == "f" and not e.digest:
            if e.size >= BIG:
                late[i] = e
            else:
                out[i] = dataclasses.replace(e, digest=agent_cache.sha256(os.path.join(root, e.path)))
                cache.seen[e.path][4] = out[i].digest
    if late:
        with ThreadPoolExecutor(max_workers=min(8, len(late))) as pool:
            digests = pool.map(lambda e: agent_cache.sha256(os.path.join(root, e.path)), late.values())
            for (i, e), digest in zip(late.items(), digests, strict=True):
                out[i] = dataclasses.replace(e, digest=digest)
                cache.seen[e.path][4] = digest
    return out


def collect(
    root: Path,
    cluster: Cluster,
    generated: tuple[str, ...] = (),
    cache: Any = None,
    on_listed: Callable[[list[str]], None] | None = None,
) -> FileSet:
    """The files to send from ``root`` to the cluster; raises if a tracked file would be left out.

    ``generated`` are paths rendered per host (``git_ignore.py``): the source's copy stays home.
    ``cache``: digests remembered from earlier runs (see hashcache); None reads every file.
    ``on_listed``: given the paths once they are known and checked, before any file is hashed,
    so that a first transfer starts while the files are still read here.
    """
    top = git.toplevel(root)
    if top is None:
        raise NotAGitTree(root)
    with ThreadPoolExecutor(max_workers=1) as pool:  # git checks tracked files while ls-files lists the tree
        tracked_changes = pool.submit(git.changed, root, False)
        cache = cache or agent_cache.Cache({}, None, 0)
        return _collect(root, cluster, generated, cache, top, tracked_changes, on_listed)


def _collect(
    root: Path,
    cluster: Cluster,
    generated: tuple[str, ...],
    cache: Any,
    top: Path,
    tracked_changes: Future[list[str]],
    on_listed: Callable[[list[str]], None] | None,
) -> FileSet:
    """collect's work once git was found; ``tracked_changes``: the tracked files that differ from
    HEAD, coming from git; the untracked ones are those ls-files lists (one walk, not two)."""
    listed = git.worktree_files(root)
    untracked = [p for p, tracked in listed.items() if not tracked]
    record = rec.load(root)
    if record is not None:
        listed.setdefault(rec.RECORD_PATH, False)
        for e in record.entries:
            if e.sha256_before is None and (root / e.path).is_file():
                listed.setdefault(e.path, False)  # added by a patchset: sent even where git ignores it
    for path in _included_files(root, cluster):
        listed.setdefault(path, False)
    skip = set(HOST_FILES) | set(generated)
    left_out: list[tuple[str, str]] = []
    wanted: list[str] = []
    for path, tracked in sorted(listed.items()):
        if path in skip or path == ".git" or path.startswith(".git/") or is_debris(path):
            continue
        why = _excluded(path, cluster)
        if why is None:
            wanted.append(path)
        elif tracked:
            left_out.append((path, why))
    base = os.path.join(root, "")
    found = [_entry(base, p, cache) for p in wanted]
    entries = []
    for path, entry in zip(wanted, found, strict=True):
        if isinstance(entry, str):
            if listed[path]:
                left_out.append((path, entry))
        elif entry is not None:
            entries.append(entry)
    if left_out:
        raise TrackedFileLeftOut(left_out, cluster.name, cluster.source)
    if on_listed is not None:
        on_listed([e.path for e in entries])
    hashed = tuple(_hashed(root, entries, cache))
    return FileSet(root, hashed, git.head(top), tuple(sorted({*tracked_changes.result(), *untracked})))
