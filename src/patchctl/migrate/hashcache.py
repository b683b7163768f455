"""The source side's hash cache: each file's sha256 and tagged lines, reused across migrates.

The same ``Cache`` as the hosts' agent (``agent_cache``), so both sides trust a remembered
hash under the same rule: size, mtime_ns, ctime_ns and inode all as they were when the file
was read, and the file older than the pass that read it. It is kept under patchctl's cache
folder, one file per source tree, never in the tree (nothing of it travels to a host). A
damaged or foreign cache is dropped whole and the files are read again; ``--checksum`` reads
every file whatever the cache says.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from patchctl.migrate import agent_cache, state

#: the most bytes of a cache that are read (about 1M files); a bigger one is dropped
LIMIT = 256 << 20


def cache_file(root: Path) -> Path:
    """Where the cache of the source tree ``root`` lives."""
    key = hashlib.sha256(str(root.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return state.state_dir() / f"hashes-{key}.json"


def clock() -> int:
    """The file system's time now (see agent_cache.fs_now), read in the cache's folder; 0 where
    that folder cannot be made (then nothing is remembered, and the source's seal is not kept)."""
    folder = state.state_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return agent_cache.fs_now(str(folder))
    except OSError:
        return 0


def load(root: Path, rule: list[Any], trust: bool, since: int | None = None) -> Any:
    """The tree's cache for the tag ``rule`` (empty unless ``trust``), remembering only files
    older than ``since`` (the ``clock`` before the files were stat'ed; None: now)."""
    return agent_cache.load_cache(str(cache_file(root)), rule, clock() if since is None else since, trust, LIMIT)


def save(root: Path, cache: Any) -> None:
    """Best effort, as ``state.remember``: a cache that cannot be written only costs reading the
    files again next time."""
    if cache.seen == cache.old:
        # every file met was remembered as it is, and none is gone: a no-change re-run writes
        # nothing, and spares building the document (its records passed the racily-clean rule
        # when they were saved, so the document would equal them)
        return
    path, remembered = cache_file(root), cache.document()
    if remembered["files"] == cache.old:
        return  # only racily clean files are new: nothing the next pass may trust
    state.write_json(path, remembered, ".hashes-")
