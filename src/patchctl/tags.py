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
from dataclasses import dataclass
from pathlib import Path

#: files larger than this are data, not sources: never read for tags (4 MiB, as the host agent)
MAX_SCAN = 4 << 20
SKIP_DIRS = {".git", ".hg", ".patchctl", "__pycache__", ".venv", "node_modules", ".mypy_cache", ".pytest_cache"}


@dataclass(frozen=True)
class TagHit:
    path: str
    line: int
    text: str
    tag: str


def tag_regex(tags: set[str]) -> re.Pattern[str]:
    return re.compile(r"#\s*(" + "|".join(re.escape(t) for t in sorted(tags)) + r")\b")


def scan(root: Path, tags: set[str]) -> list[TagHit]:
    """Every line under ``root`` whose comment carries one of ``tags``."""
    rx = tag_regex(tags)
    needles = [t.encode() for t in tags]
    hits: list[TagHit] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
                if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SCAN:
                    continue
                with open(full, "rb") as f:
                    data = f.read(MAX_SCAN + 1)
            except OSError:
                continue
            if not any(n in data for n in needles) or b"\0" in data[:1024]:
                continue
            rel = os.path.relpath(full, root)
            text = data.decode("utf-8", errors="replace")
            for n, line in enumerate(text.splitlines(), 1):
                m = rx.search(line)
                if m:
                    hits.append(TagHit(rel, n, line.rstrip(), m.group(1)))
    return hits
