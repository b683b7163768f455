"""Proofs that a patch is present in a text, kept so that an unchanged file is not parsed again.

A keyword-rename or prelude patch is checked on the file's syntax tree: ``ast.parse`` of a
25-29 KB verl module and a walk over it, some 80M instructions of a ``verify`` of uky (issue
39.13, callgrind), every run, on a tree that did not change. A kind whose ``check`` reads nothing
but the text, the patch and the file's name says so (``proof_cached = True``), and its answer
``present`` is kept under ``$PATCHCTL_CACHE/proofs``, named by a hash of everything that answer
was drawn from:

- this module's :data:`FORMAT` (bumped when a kind's check changes what it accepts), patchctl's
  version, the exact Python (whose parser the check runs), the kind's ``check`` bytecode;
- the kind's name, the file's name in the tree, what the record kept at apply (``undo``);
- the whole patch as it was loaded (its ``repr``: id, tag, target, params, resolutions, ...);
- the file's text.

Only ``present`` is kept: a patch missing or modified is checked again each time (its reason may
name lines, and it is the case a user acts on). An entry holds its own name and the answer; one
that does not parse, or names another key, is not trusted and the check runs. Entries are
written whole (a temporary file renamed into place) in a folder only the user can write, as the
load cache beside it (:mod:`patchctl.patchsets.loads`). Texts under :data:`MIN_TEXT` characters
are checked every time: parsing them costs less than the cache's file.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import Any

from patchctl import __version__
from patchctl.patchsets.kinds.base import Check, Context, PatchKind
from patchctl.patchsets.model import Patch, Presence
from patchctl.sha import sha256

#: bumped when a cached kind's check changes what it accepts: older entries are then never looked up
FORMAT = "1"
#: texts shorter than this are checked every time
MIN_TEXT = 4096
#: an entry larger than this is not read (a proof is a sentence and some line numbers)
MAX_ENTRY = 64 * 1024


class Proven:
    """``kind`` whose ``present`` answers are kept (the registry wraps a kind that says
    ``proof_cached = True`` in it, innermost, so every check of the kind goes through the cache)."""

    def __init__(self, kind: PatchKind) -> None:
        self._kind = kind

    def __getattr__(self, name: str) -> Any:  # name, apply, revert, parse_params, ...
        return getattr(self._kind, name)

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        return check(self._kind, text, patch, ctx)


def check(kind: PatchKind, text: str | None, patch: Patch, ctx: Context) -> Check:
    """``kind.check(text, patch, ctx)``, answered from the cache where the same question was
    answered ``present`` before."""
    if text is None or len(text) < MIN_TEXT or not getattr(kind, "proof_cached", False):
        return kind.check(text, patch, ctx)
    name = key(kind, text, patch, ctx)
    kept = _read(name)
    if kept is not None:
        return kept
    found = kind.check(text, patch, ctx)
    if found.presence is Presence.PRESENT and not found.detail:
        _write(name, found)
    return found


def folder() -> str:
    """``$PATCHCTL_CACHE/proofs``."""
    from patchctl.bytecode import cache_root

    return os.path.join(cache_root(os.environ), "proofs")


def key(kind: PatchKind, text: str, patch: Patch, ctx: Context) -> str:
    """The entry's name: a hash of everything the kept answer was drawn from (see the module)."""
    code = getattr(type(kind).check, "__code__", None)
    parts = (
        FORMAT,
        __version__,
        sys.version,
        code.co_code.hex() if code is not None else "",
        kind.name,
        ctx.path,
        repr(ctx.undo),
        repr(patch),
    )
    h = sha256("\0".join(parts).encode("utf-8", "surrogatepass"))
    h.update(b"\0")
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _read(name: str) -> Check | None:
    """The kept answer of ``name``, or None: none kept, unreadable, or not what was written."""
    try:
        fd = os.open(os.path.join(folder(), name), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            raw = f.read(MAX_ENTRY + 1)
        entry = json.loads(raw) if len(raw) <= MAX_ENTRY else None
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("key") != name:
        return None
    reason, owned = entry.get("reason"), entry.get("owned")
    if not isinstance(reason, str) or not isinstance(owned, list):
        return None
    if not all(type(n) is int and n > 0 for n in owned):
        return None
    return Check(Presence.PRESENT, reason, frozenset(owned))


def _write(name: str, found: Check) -> None:
    """Keep ``found`` under ``name``, whole or not at all; a cache that cannot be written is left
    as it is (the check ran, and the next run runs it again)."""
    where = folder()
    body = json.dumps({"key": name, "reason": found.reason, "owned": sorted(found.owned_lines)})
    tmp = os.path.join(where, f".{name}.{os.getpid()}.tmp")
    try:
        os.makedirs(where, mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(body)
        os.replace(tmp, os.path.join(where, name))
    except OSError:
        with contextlib.suppress(OSError):  # not made, or gone already
            os.unlink(tmp)
