"""migrate's source check, remembered: the last answer for a tree, given again while nothing it read changed.

Every migrate verifies the source before it sends it (:mod:`patchctl.migrate.source`), and on a
no-change re-run of verl that check was about a fifth of migrate's own work here: the patches'
files parsed again, their kinds' modules imported, to give the answer of the run before. So
the answer is kept under patchctl's cache folder (never in the tree: nothing of it travels to a
host), with everything it was worked out from:

- every file of the tree the check read or looked for (through a recording
  :class:`~patchctl.patchsets.reader.TreeReader`, and the apply record and conflict state it
  reads itself), each by its resolved path and its ``stat``: mode, size, mtime, ctime, inode
  and device, or as missing;
- every file under each patchset's folder the same way (a kind reads some there while it
  checks: text-hunk's bases), and the patchsets as loaded (their ``repr``: every patch's params);
- the tree's root and verl version, patchctl's version, Python's and the machine's name.

An answer is given again only when all of that is as it was; anything else (a file edited,
touched, replaced, created or removed, another patchset, another patchctl) runs the check
again, as without a memo. The same racily-clean rule as the hash cache and the seal keeps it
sound: an answer is kept only when no file it read is as young as the clock read before the
check began (a change within one clock tick could keep every stat field). A memo that cannot
be read, or is not this format, is none; it is written whole or not at all (a temporary file
renamed over it).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from patchctl import __version__
from patchctl.migrate import state

#: 1: the first memo; a memo of another format is none
FORMAT = 1
#: the most bytes of a memo read (a check reads tens of files, not thousands)
LIMIT = 1 << 20

#: what a file is known by: its resolved path, then these fields of its ``stat``; None when missing
Identity = list[Any] | None


def memo_file(root: Path, names: Sequence[str]) -> Path:
    """One memo per tree and list of patchsets: a tree checked against two sets in turn keeps both."""
    key = "\0".join([str(root), *names]).encode("utf-8", "surrogateescape")
    return state.state_dir() / f"source-{hashlib.sha256(key).hexdigest()[:32]}.json"


def identity(path: str) -> Identity:
    """``path`` as the memo knows it (see the module): where it resolves to, and that file's stat."""
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except (OSError, ValueError):
        return None
    return [real, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def patchset_files(roots: Iterable[Path]) -> list[str]:
    """Every file under each patchset's folder, sorted (what a kind may read there while it checks)."""
    out: list[str] = []
    for top in roots:
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            out += (os.path.join(folder, f) for f in sorted(files))
    return out


#: the packages whose versions can change a check's answer: the load check parses YAML with
#: PyYAML and requirement lines with packaging (TOML, JSON and Python come with Python itself)
JUDGES = ("yaml", "packaging")


def judges() -> list[Identity]:
    """Each judging package as installed (where its ``__init__`` is, and that file's stat): an
    upgrade replaces the file, so a memo from before it is none. Found without importing it."""
    import importlib.util

    out: list[Identity] = []
    for name in JUDGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        out.append(identity(spec.origin) if spec is not None and spec.origin else None)
    return out


def context(root: Path, version: str | None, patchsets: Sequence[Any]) -> str:
    """The digest of what, besides the files, the answer depends on."""
    doc = [FORMAT, __version__, sys.version, socket.gethostname(), str(root), version, repr(list(patchsets))]
    doc.append(judges())
    return hashlib.sha256(json.dumps(doc).encode("utf-8", "surrogateescape")).hexdigest()


def recall(root: Path, version: str | None, patchsets: Sequence[Any]) -> dict[str, Any] | None:
    """The answer kept for this very check, or None (none kept, another context, a file changed)."""
    try:
        with open(memo_file(root, [ps.name for ps in patchsets]), "rb") as f:
            data = f.read(LIMIT + 1)
        if len(data) > LIMIT:
            return None
        doc = json.loads(data)
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            return None
        if doc["context"] != context(root, version, patchsets):
            return None
        tree, kits, answer = doc["tree"], doc["patchsets"], doc["answer"]
        if not isinstance(tree, list) or not isinstance(kits, list) or not isinstance(answer, dict):
            return None
        if [p for p, _ in kits] != patchset_files(ps.root for ps in patchsets):
            return None  # a file added to a patchset's folder, or removed
        for path, known in (*tree, *kits):
            if identity(path) != known:
                return None
        return answer
    except (OSError, ValueError, KeyError, TypeError):
        return None


def keep(
    root: Path,
    version: str | None,
    patchsets: Sequence[Any],
    read: Iterable[str],
    since: int,
    answer: dict[str, Any],
) -> None:
    """Keep ``answer``, worked out from the tree's files ``read`` (paths relative to ``root``),
    unless one of them (or a patchset's file) is as young as ``since``, the clock read before
    the check began (0: no clock, nothing kept). Best effort, as the hash cache."""
    if since <= 0:
        return
    tree: list[tuple[str, Identity]] = [
        (p, identity(p)) for p in (os.path.join(root, rel) for rel in sorted(set(read)))
    ]
    kits: list[tuple[str, Identity]] = [(p, identity(p)) for p in patchset_files(ps.root for ps in patchsets)]
    for _, known in (*tree, *kits):
        if known is not None and max(known[3], known[4]) >= since:
            return  # racily clean: a change within this tick could keep every field
    doc = {
        "format": FORMAT,
        "context": context(root, version, patchsets),
        "tree": tree,
        "patchsets": kits,
        "answer": answer,
    }
    state.write_json(memo_file(root, [ps.name for ps in patchsets]), doc, ".source-")
