"""``patchctl verify``: each patch's postcondition, checked on the code's structure.

It reads the tree as it is (no apply plan is built) through the same decision ladder apply
uses (:func:`~patchctl.patchsets.reader.assess`), and reports one
:class:`~patchctl.patchsets.model.PatchResult` per patch with a :class:`Presence` status.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from patchctl.errors import PatchctlError, SourceSyntaxError
from patchctl.journal_paths import TMP_SUFFIX
from patchctl.patchsets import conflicts, loads
from patchctl.patchsets import record as rec
from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.model import Patch, PatchResult, Patchset, Presence
from patchctl.patchsets.reader import TreeReader, assess, to_bytes
from patchctl.records import record, replace
from patchctl.tags import TagHit, scan
from patchctl.target import Target


@record(frozen=True)
class Report:
    target: Target
    checks: tuple[PatchResult, ...]
    #: tagged lines that some present patch accounts for
    accounted: tuple[TagHit, ...]
    #: tagged lines no patch accounts for: hand edits worth capturing
    unaccounted: tuple[TagHit, ...]
    #: temp files of an interrupted write no journal accounts for (relative paths)
    leftovers: tuple[str, ...]
    #: conflicts ``apply --conflicts=markers`` wrote that wait for ``refresh`` ("PATCH in FILE")
    conflicts: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return (
            all(isinstance(c.status, Presence) and c.status.passes for c in self.checks)
            and not self.leftovers
            and not self.conflicts
        )

    def passes(self, strict: bool) -> bool:
        """``--strict`` also fails on tagged lines no patch accounts for."""
        return self.ok and not (strict and self.unaccounted)

    def to_json(self, strict: bool = False) -> dict[str, Any]:
        return {
            "target": str(self.target.root),
            "version": self.target.version,
            "ok": self.passes(strict),
            "patches": [c.to_json() for c in self.checks],
            "tags": {
                "accounted": len(self.accounted),
                "unaccounted": [{"path": h.path, "line": h.line, "text": h.text} for h in self.unaccounted],
            },
            "leftover_temp_files": list(self.leftovers),
            "conflicts": list(self.conflicts),
        }


def verify(target: Target, patchsets: list[Patchset], inventory: bool = True, tree: TreeReader | None = None) -> Report:
    """Each patch's presence in ``target``; ``inventory``: also walk the tree for every tagged line
    (accounted or not) and leftover temp file. migrate reads only the presence (its file set keeps
    its own inventory, from its hash cache, and never sends temp files): without the walk a tree
    of 100k files is not read whole once more. ``tree``: the reader of ``target`` to read it
    through (migrate's records what the check reads, see migrate.source_memo)."""
    tree = tree if tree is not None else TreeReader(target)
    record = rec.load(target.root)
    owned: dict[str, set[int]] = {}
    checks = []
    pending = conflicts.load(target.root)
    marked = {m.path for m in pending}
    for ps in patchsets:
        for patch in ps.patches:
            entry = record.find(ps.name, patch.id) if record else None
            if any(t in marked for t in patch.target):  # markers make the file unreadable as code
                checks.append(
                    PatchResult(
                        ps.name,
                        patch.id,
                        Presence.MISSING,
                        next(t for t in patch.target if t in marked),
                        "needs resolution: its file holds conflict markers that apply "
                        "--conflicts=markers wrote; resolve them, then run patchctl refresh",
                    )
                )
                continue
            try:
                checks.append(_check(ps, patch, entry, tree, owned))
            except SourceSyntaxError as exc:  # the file no longer parses: a failed check, not a failed run
                found = Presence.MODIFIED if entry else Presence.MISSING
                checks.append(PatchResult(ps.name, patch.id, found, exc.path, str(exc)))
    checks = _still_loading(checks, tree, record, {(ps.name, p.id): p for ps in patchsets for p in ps.patches})
    accounted: list[TagHit] = []
    unaccounted: list[TagHit] = []
    tags = {p.tag for ps in patchsets for p in ps.patches}
    for hit in scan(target.root, tags) if inventory else ():
        (accounted if hit.line in owned.get(hit.path, ()) else unaccounted).append(hit)
    return Report(
        target,
        tuple(checks),
        tuple(accounted),
        tuple(unaccounted),
        tuple(leftover_temp_files(target.root)) if inventory else (),
        tuple(f"{m.patch} in {m.path}" for m in pending),
    )


def _check(
    ps: Patchset, patch: Patch, entry: rec.Entry | None, tree: TreeReader, owned: dict[str, set[int]]
) -> PatchResult:
    def result(presence: Presence, path: str | None, reason: str, detail: str = "") -> PatchResult:
        return PatchResult(ps.name, patch.id, presence, path, reason, detail)

    a = assess(patch, tree, ps.root, entry.undo if entry else None)
    if a.skip is not None or a.found is None or a.path is None:
        return result(Presence.MISSING if entry else Presence.NOT_APPLICABLE, a.path, a.skip or "")
    path, found = a.path, a.found
    owned.setdefault(path, set()).update(found.owned_lines)
    if found.presence is not Presence.MISSING:
        return result(found.presence, path, found.reason, found.detail)
    if a.superseded:
        return result(Presence.SUPERSEDED_UPSTREAM, path, a.superseded)
    would = KINDS[patch.kind].apply(tree.read_for(patch, path), patch, Context(ps.root, path, read=tree.confined))
    if would.status is EditStatus.NOT_APPLICABLE and not entry:
        return result(Presence.NOT_APPLICABLE, path, would.reason)
    why = f"{found.reason}; run patchctl apply" + (f" (it was applied {entry.applied_at})" if entry else "")
    return result(Presence.MISSING, path, why)


def _still_loading(
    checks: list[PatchResult], tree: TreeReader, record: rec.Record | None, patches: dict[tuple[str, str], Patch]
) -> list[PatchResult]:
    """The load check apply runs (issue 38), on each file that holds a present patch: one that no
    longer loads as its type fails its patches (``modified``), unless it is shown to be as upstream
    shipped it (:func:`_as_shipped`), which is only noted. A file a patch ships whole is left out,
    as apply leaves it out."""
    present = [
        c
        for c in checks
        if c.status is Presence.PRESENT
        and c.path is not None
        and not KINDS[patches[(c.patchset, c.patch)].kind].creates_target
    ]
    said: dict[str, tuple[Presence, str]] = {}
    for rel in sorted({c.path for c in present if c.path is not None}):
        text = tree.read(rel, binary=True)
        problem = loads.loads(rel, text) if text is not None else None
        if problem is None:
            continue
        ours = [c for c in present if c.path == rel]
        if _as_shipped(rel, text, [(c.patchset, patches[(c.patchset, c.patch)]) for c in ours], tree, record):
            said[rel] = (Presence.PRESENT, f"; note: {problem}, as upstream shipped it")
        else:
            said[rel] = (Presence.MODIFIED, f"; but {problem}: fix the file by hand, or restore it and apply again")
    out = []
    for c in checks:
        if c.status is Presence.PRESENT and c.path in said:
            status, why = said[c.path]
            c = replace(c, status=status, reason=c.reason + why)
        out.append(c)
    return out


def _as_shipped(
    rel: str, text: str | None, ours: list[tuple[str, Patch]], tree: TreeReader, record: rec.Record | None
) -> bool:
    """Whether ``rel`` with its patches taken out again (in memory) is the file the record says
    patchctl found before a patch there, and that did not load then either."""
    entries = [e for e in (record.entries if record else []) if e.path == rel]
    for patchset, patch in reversed(ours):
        entry = next((e for e in entries if (e.patchset, e.patch) == (patchset, patch.id)), None)
        ctx = Context(Path("."), rel, undo=entry.undo if entry else None, read=tree.confined)
        try:
            edit = KINDS[patch.kind].revert(text, patch, ctx)
        except PatchctlError:  # the kind cannot read the file as it is: nothing shows upstream's text
            return False
        if edit.status is not EditStatus.CHANGED:
            return False
        text = edit.text
    if text is None or loads.loads(rel, text) is None:
        return False
    from patchctl import fsutil  # here: only a file that no longer loads comes this far (issue 39.13)

    return fsutil.sha256_bytes(to_bytes(text)) in {e.sha256_before for e in entries}


def leftover_temp_files(root: Path) -> list[str]:
    """``*.patchctl-tmp`` files in the tree: debris of a write that was cut off (and that
    ``migrate`` must never ship). A journaled write never leaves them once recovered."""
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        out += [os.path.relpath(os.path.join(folder, f), root) for f in files if f.endswith(TMP_SUFFIX)]
    return sorted(out)
