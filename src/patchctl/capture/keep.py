"""What a re-capture into an existing patchset keeps of it: the conflict resolutions still valid.

``patchctl refresh`` records each conflict the user resolved by hand in ``resolutions.toml``
beside the manifest. A capture used to replace the whole ``--out`` folder, so re-capturing a
fork after one more edit silently threw that work away (issue 39). A resolution says "where
upstream reads ``before``, this patch's edit becomes ``after``": it still holds exactly when the
new patchset has a patch of the same id whose edit is the same. One whose patch is gone, or whose
edit changed (another kind, target, parameters or shipped file), would replay a stale answer, so
it is dropped, and the note says which and why.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from patchctl.errors import PatchctlError
from patchctl.patchsets import resolutions
from patchctl.patchsets.loader import MANIFEST, load_patchset

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: the keys of a ``[[patch]]`` table that make its edit; the rest (title, why, origin, ...)
#: describe it and may change between captures without touching what a resolution resolved
EDIT_KEYS = ("kind", "target", "params", "tag")


def carry(old: Path, new: Path) -> tuple[str, ...]:
    """Copy into the patchset ``new`` the resolutions of ``old`` that still apply; the notes to print.

    ``old`` is the folder ``--out`` names (nothing to do when it holds no resolutions); ``new`` is
    the staged patchset, not yet published, so a failure here leaves ``--out`` as it was.
    """
    if not (old / resolutions.FILE).exists() and not (old / resolutions.FILE).is_symlink():
        return ()
    try:
        # "keep upstream" records too: dropping the patch from a version on is the user's work as well
        recorded = [(p.id, r) for p in load_patchset(old).patches for r in (*p.resolutions, *p.kept)]
        before, after = _edits(old), _edits(new)
    except (PatchctlError, OSError, ValueError) as exc:
        return (f"{old / resolutions.FILE} could not be read ({exc}): none of its resolutions were carried over",)
    kept, dropped = 0, []
    for pid, resolution in recorded:
        why = _stale(pid, before, after, old, new)
        if why:
            dropped.append(f"{pid} ({why})")
            continue
        resolutions.record(new, pid, resolution)
        kept += 1
    notes = []
    if kept:
        notes.append(f"kept {kept} conflict resolution(s) of {old / resolutions.FILE} that still apply")
    if dropped:
        notes.append(f"dropped {len(dropped)} resolution(s) that no longer apply: " + "; ".join(dropped))
    return tuple(notes)


def _edits(directory: Path) -> dict[str, dict[str, Any]]:
    """patch id -> the keys of its table that make the edit."""
    doc = tomllib.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    out: dict[str, dict[str, Any]] = {}
    for table in doc.get("patch", []):
        if isinstance(table, dict) and isinstance(table.get("id"), str):
            out[table["id"]] = {k: table.get(k) for k in EDIT_KEYS}
    return out


def _stale(pid: str, before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]], old: Path, new: Path) -> str:
    """Why the resolution of ``pid`` no longer applies; ``""`` when it does."""
    if pid not in after:
        return "the new capture has no patch of that id"
    if pid not in before or before[pid] != after[pid]:
        return "its edit changed since the conflict was resolved"
    for name in _files(after[pid].get("params")):
        if _bytes(old / name) != _bytes(new / name):
            return f"its file {name} changed since the conflict was resolved"
    return ""


def _files(value: Any) -> list[str]:
    """The relative paths among a patch's parameters (the files it ships live in the patchset)."""
    if isinstance(value, str):
        parts = Path(value).parts
        return [value] if parts and not Path(value).is_absolute() and ".." not in parts and "/" in value else []
    if isinstance(value, dict):
        return [f for v in value.values() for f in _files(v)]
    if isinstance(value, list):
        return [f for v in value for f in _files(v)]
    return []


def _bytes(path: Path) -> bytes | None:
    """A shipped file's content; None when it is missing or not a regular file inside the patchset."""
    try:
        return path.read_bytes() if path.is_file() and not path.is_symlink() else None
    except OSError:
        return None
