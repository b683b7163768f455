"""Which of FORK's and BASE's files capture reads: regular files inside the tree, nothing else.

A tree handed to capture is not trusted (issue 41). A symlink in it, committed or not, may lead
out of it (``key -> ~/.ssh/id_ed25519``, ``zero -> /dev/zero``) or into ``.git``; a FIFO blocks
whoever opens it; a socket or a device holds no file's bytes. Every name git (or a walk) lists
is judged here before anything reads it. Those are skipped with a note naming them; a symlink
that stays inside the tree is read through to its file, as before. A name that is gone, or a
link to a folder (git lists one as a single entry, with no file to read), is left out quietly.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from patchctl import confine
from patchctl.errors import OutsideTree
from patchctl.tags import SKIP_DIRS


@dataclass(frozen=True)
class Walk:
    #: relative POSIX paths of the regular files to read
    files: frozenset[str]
    #: (path, why it is not read), sorted by path
    skipped: tuple[tuple[str, str], ...] = ()


def judge(root: Path, rel: str) -> str | None:
    """None when ``root/rel`` is a regular file inside ``root`` (through symlinks that stay inside);
    else why it is not read, or "" for a name to leave out without a word (gone, a folder)."""
    try:
        mode = confine.resolve_target(root, rel).stat().st_mode
    except OutsideTree as exc:
        return exc.problem
    except (OSError, RuntimeError):  # gone, or a symlink loop (RuntimeError from Path.resolve)
        return ""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return ""
    return f"is {_what(mode)}, not a regular file"


def _what(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def judged(root: Path, names: Iterable[str]) -> Walk:
    """``names`` (relative to ``root``) split into files to read and paths skipped with a reason."""
    files, skipped = [], []
    for rel in names:
        why = judge(root, rel)
        if why is None:
            files.append(rel)
        elif why:
            skipped.append((rel, why))
    return Walk(frozenset(files), tuple(sorted(skipped)))


def walk(root: Path) -> Walk:
    """Every name under ``root`` but :data:`~patchctl.tags.SKIP_DIRS`, judged: for a tree git does
    not know. Links to folders are judged too (one leading out gets its note) but never entered."""
    names = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        names += [name if rel == "." else f"{rel}/{name}".replace(os.sep, "/") for name in filenames + links]
    return judged(root, names)
