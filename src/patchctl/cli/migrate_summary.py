"""``migrate --dry-run``'s summary per host: counts, bytes and top-level folders, not every file.

A first migrate sends the whole tree: listing it was about 830 lines for two hosts, which hid
the one line that mattered (a delete, a folder that should not go). The summary says what kind
of change, how much and where; ``--list`` (or a short plan) still shows every item.
"""

from __future__ import annotations

import codecs
import contextlib
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from patchctl.cli.echo import echo
from patchctl.cli.render import quote_path

#: a plan up to this many items is listed whole, even without --list (a re-run's few changes)
SHORT = 20


def unquote(shown: str) -> str:
    """The path :func:`~patchctl.quoting.quote_path` showed as ``shown`` (git's C-style quoting)."""
    if not (len(shown) > 1 and shown.startswith('"') and shown.endswith('"')):
        return shown
    return os.fsdecode(codecs.escape_decode(shown[1:-1].encode("utf-8"))[0])


def _top(path: str) -> str:
    head, sep, _ = path.partition("/")
    return f"{head}/" if sep else "(top level)"


def folders(sends: Sequence[str], root: Path) -> list[tuple[str, int, int]]:
    """(top-level folder, files, bytes) of the files to send, biggest first; sizes read from the
    source tree (rsync's delta is not known without sending)."""
    files: Counter[str] = Counter()
    size: Counter[str] = Counter()
    for shown in sends:
        path = unquote(shown)
        files[_top(path)] += 1
        with contextlib.suppress(OSError):  # gone since the plan was made: counted, not sized
            size[_top(path)] += (root / path).lstat().st_size
    return sorted(((f, files[f], size[f]) for f in files), key=lambda row: (-row[2], row[0]))


def human(n: float) -> str:
    """``512 B``, ``1.5 kB``, ``12.3 MB``: sizes in the migrate tables and summaries."""
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)


def show(host: str, changes: Sequence[str], root: Path, full: bool) -> None:
    """Print ``host``'s planned changes: a summary line, the biggest folders, and the items
    themselves when asked (``--list``) or when they are few."""
    kinds: dict[str, list[str]] = {"send": [], "delete": [], "render": []}
    for item in changes:
        verb, _, path = item.partition(" ")
        kinds.setdefault(verb, []).append(path)
    sends = kinds["send"]
    rows = folders(sends, root)
    size = sum(b for _, _, b in rows)
    echo(
        f"\n{host}: would send {len(sends)} file(s) ({human(size)}), delete {len(kinds['delete'])}, "
        f"render {len(kinds['render'])}"
    )
    if full or len(changes) <= SHORT:
        for c in changes:
            echo(f"  {c}")
        return
    width = max(len(quote_path(f)) for f, _, _ in rows)
    for folder, n, b in rows[:10]:
        echo(f"  {quote_path(folder):<{width}}  {n:>6} file(s)  {human(b):>9}")
    if len(rows) > 10:
        echo(f"  ... {len(rows) - 10} more folder(s)")
    for path in kinds["delete"]:  # a deletion is never summarised away
        echo(f"  delete {path}")
    echo(f"  (--list shows all {len(changes)} items)")
