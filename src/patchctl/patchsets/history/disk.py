"""Walks kept on disk (issue 38 req 8): the next command, or a matrix's other worker, reads a walk
instead of merging along upstream's commits again.

One JSON file per walk, ``<cache>/history/<SCHEMA>/<key[:2]>/<key>.json``, the key a sha256 over
the walk's own code, the base and target commits, the path and the two texts the walk starts
from (upstream's file at the base and the file with the edit): what the walk's outcome depends
on besides the repository, whose commits never change.

The cache is a folder that anything running as the user may have written, so a file is data to
check, never trusted: every field must have its type, commits are 40 hex digits, paths are plain
and inside the tree, upstream's text is read again from the repository (never from the file),
and a placed edit may hold no line (compared without indentation, as a moved scope re-indents)
that is neither in upstream's file at that commit nor in the edit's own file at its base. A file
that fails any check is ignored and the walk done again. Files are written whole (a temporary
file renamed), and a cache that cannot be read or written only costs the time.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any, TypeGuard

from patchctl import __version__
from patchctl.confine import in_metadata, relative_inside
from patchctl.patchsets.history.upstream import Upstream
from patchctl.patchsets.history.walk import Carried, State
from patchctl.patchsets.placement import scopes
from patchctl.releases import cache_dir

#: the layout of a cached walk; a new one is a new folder, the old one never read
SCHEMA = "walks-1"
_SHA = re.compile(r"[0-9a-f]{40}")
STATUSES = ("placed", "removed", "conflict", "lost")
#: the longest message field kept (a commit's subject, a reason); a longer one is no walk of ours
LONGEST = 2000


#: the walk's scope answers come from placement: its scope table and the parse under it
_PLACEMENT = tuple(
    Path(__file__).parent.parent / "placement" / name for name in ("scopes.py", "anchors.py", "pyparse.py")
)


def folder() -> Path:
    return cache_dir() / "history" / SCHEMA


@functools.lru_cache(maxsize=1)
def _code() -> str:
    """A digest of the walk's own code: a walk cached by other code (an upgrade, a change of
    :data:`~patchctl.patchsets.placement.scopes.RENAMED`, placement's scope finder) is never
    read, whatever the version says."""
    h = hashlib.sha256(__version__.encode())
    here = Path(__file__).parent
    for file in (here / "walk.py", here / "upstream.py", here / "disk.py", *_PLACEMENT):
        with contextlib.suppress(OSError):  # run from an archive: the version alone
            h.update(file.read_bytes())
    return h.hexdigest()


def key(base: str, target: str, path: str, upstream: str, patched: str) -> str:
    h = hashlib.sha256()
    for part in (_code(), base, target, path, upstream, patched):
        h.update(hashlib.sha256(part.encode("utf-8", "surrogateescape")).digest())
    return h.hexdigest()


def _file(k: str) -> Path:
    return folder() / k[:2] / f"{k}.json"


def save(k: str, c: Carried) -> None:
    """Write the walk's outcome; a cache that cannot be written is left as it is."""
    doc = {
        "status": c.status,
        "commit": c.state.commit,
        "path": c.state.path,
        "patched": c.state.patched,
        "scope": c.state.scope,
        "merges": c.state.merges,
        "moves": list(c.state.moves),
        "stopped_at": c.commit.sha if c.commit is not None else None,
        "where": c.where,
        "reason": c.reason,
        "what": c.what,
    }
    dest = _file(k)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".walk-", dir=dest.parent)
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as out:
            json.dump(doc, out)
        os.replace(tmp, dest)
    except OSError:
        return


def _text(v: Any) -> TypeGuard[str]:
    return isinstance(v, str) and len(v) <= LONGEST and "\n" not in v and "\r" not in v


def _plain(path: Any) -> TypeGuard[str]:
    return isinstance(path, str) and _text(path) and relative_inside(path) is None and in_metadata(path) is None


def load(k: str, up: Upstream, base_patched: str) -> Carried | None:
    """The walk cached under ``k``, checked against the repository and the edit it starts from;
    None when there is none or it fails a check."""
    try:
        doc = json.loads(_file(k).read_text(encoding="utf-8", errors="surrogateescape"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    commit, path, patched, scope = doc.get("commit"), doc.get("path"), doc.get("patched"), doc.get("scope")
    merges, moves, stopped = doc.get("merges"), doc.get("moves"), doc.get("stopped_at")
    where, reason, what, status = doc.get("where"), doc.get("reason"), doc.get("what"), doc.get("status")
    if (
        status not in STATUSES
        or not (isinstance(commit, str) and _SHA.fullmatch(commit))
        or not _plain(path)
        or not isinstance(patched, str)
        or not (scope is None or _text(scope))
        or not (isinstance(merges, int) and not isinstance(merges, bool) and merges >= 0)
        or not (isinstance(moves, list) and all(_text(m) for m in moves))
        or not (stopped is None or (isinstance(stopped, str) and _SHA.fullmatch(stopped)))
        or not (where is None or _text(where))
        or not _text(reason)
        or not _text(what)
    ):
        return None
    upstream = up.read(commit, path)
    if upstream is None:
        return None
    if status == "placed" and not _only_known_lines(patched, upstream, base_patched):
        return None
    state = State(commit, path, upstream, patched, scope, merges, tuple(moves))
    return Carried(status, state, up.info(stopped) if stopped else None, where, reason, what)


def _only_known_lines(patched: str, upstream: str, base_patched: str) -> bool:
    """Whether every line of ``patched`` is upstream's at its commit or the edit's at its base:
    a cached walk brings the edit along, it never writes a line of its own."""
    known = {ln.strip() for ln in scopes.lines(upstream)} | {ln.strip() for ln in scopes.lines(base_patched)}
    return all(ln.strip() in known for ln in scopes.lines(patched))
