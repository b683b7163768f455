"""The inventory of tagged lines in a tree (what ``grep -rn "# Uky"`` finds, but exact).

Files are read as bytes and filtered by a substring test before any line is looked at, so a
verl tree of ~400 files takes a few milliseconds. Nothing here parses Python.

Only regular files of at most :data:`MAX_SCAN` bytes are read, the rule migrate's host agent
follows (``migrate.agent_cache.MAX_SCAN``): tagged lines live in source files, and a fork may hold
gigabytes of data that ``migrate``'s source check (``verify`` on every run) would otherwise read
whole. A symlink is never followed (it could lead outside the tree) and a FIFO never opened (it
would block).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from patchctl.records import record

#: files larger than this are data, not sources: never read for tags (4 MiB, as the host agent)
MAX_SCAN = 4 << 20
SKIP_DIRS = {".git", ".hg", ".patchctl", "__pycache__", ".venv", "node_modules", ".mypy_cache", ".pytest_cache"}


@record(frozen=True)
class TagHit:
    path: str
    line: int
    text: str
    tag: str


def tag_regex(tags: set[str]) -> re.Pattern[str]:
    return re.compile(r"#\s*(" + "|".join(re.escape(t) for t in sorted(tags)) + r")\b")


def scan(root: Path, tags: set[str]) -> list[TagHit]:
    """Every line under ``root`` whose comment carries one of ``tags``, in ``os.walk``'s order
    (folders and files by name)."""
    rx = tag_regex(tags)
    needles = [t.encode() for t in tags]
    hits: list[TagHit] = []
    for full, data in _sources(str(root)):
        if not any(n in data for n in needles) or b"\0" in data[:1024]:
            continue
        rel = os.path.relpath(full, root)
        text = data.decode("utf-8", errors="replace")
        for n, line in enumerate(text.splitlines(), 1):
            m = rx.search(line)
            if m:
                hits.append(TagHit(rel, n, line.rstrip(), m.group(1)))
    return hits


def _sources(root: str) -> Iterator[tuple[str, bytes]]:
    """(path, bytes) of each regular file of at most :data:`MAX_SCAN` bytes under ``root``, but
    :data:`SKIP_DIRS`, in ``os.walk``'s top-down order with names sorted.

    ``os.scandir`` and ``os.open``/``os.read``, not ``os.walk`` and ``open()``: one ``lstat`` per
    name (from the folder's own entry) and no file object per file, a third of verify's
    inventory on a verl tree (issue 39). Unreadable folders and files are passed over, as
    ``os.walk`` passes them over.
    """
    folders = [root]
    while folders:
        top = folders.pop()
        try:
            with os.scandir(top) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:
            continue
        below = []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIP_DIRS:
                        below.append(entry.path)
                    continue
                st = entry.stat(follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SCAN:
                    continue  # a link (never followed), a FIFO (never opened), a data file
                fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                data = os.read(fd, st.st_size + 1)
            except OSError:
                continue
            finally:
                os.close(fd)
            yield entry.path, data
        folders.extend(reversed(below))  # popped in name order, each one's files before the next folder
