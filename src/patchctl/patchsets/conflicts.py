"""``apply --conflicts=markers``: a conflicting patch written at its best candidate place with
conflict markers, and the tree's list of conflicts waiting for ``patchctl refresh``.

Each conflict is written as a 3-way view the user edits (upstream's text, the patch's
original, the patch's change; the order ``git merge --conflict=diff3`` uses)::

    <<<<<<< upstream: FILE lines A-B
    ||||||| PATCH: the patch's original
    =======
    >>>>>>> PATCH: the patch's change

``.patchctl/conflicts.json`` records, per conflict, upstream's text there and the line counts and
hashes of the untouched text between the conflicts, so that ``refresh`` can cut each resolution
out of the edited file without markers, and tell an edit outside the conflicts from one inside.
Apply refuses a tree with conflicts waiting; ``verify`` names them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchctl.confine import in_metadata, not_a_real_folder, why_outside
from patchctl.errors import ConflictsPending, ConflictStateDamaged
from patchctl.patchsets.model import Outcome, Patch, PatchResult, Patchset
from patchctl.patchsets.placement.pyparse import split_lines
from patchctl.records import asdict, record, replace
from patchctl.sha import sha256

if TYPE_CHECKING:  # verify reads the pending conflicts; only apply's markers need the planner
    from patchctl.patchsets.kinds import marking
    from patchctl.patchsets.plan import Plan

STATE_PATH = ".patchctl/conflicts.json"


def digest(lines: list[str]) -> str:
    return sha256("".join(lines).encode("utf-8")).hexdigest()


@record(frozen=True)
class Marked:
    """One conflict written with markers."""

    patchset: str
    patch: str
    path: str
    #: upstream's text at the place, and its indentation
    upstream: str
    indent: str
    #: the untouched lines between the previous conflict (or the file's start) and this one
    gap_lines: int
    gap_sha: str
    #: the untouched lines after this conflict up to the next one or the file's end
    next_lines: int
    next_sha: str
    #: the tree's version, recorded with the resolution
    version: str = ""
    #: the place's own anchors and block headers where the patch's led nowhere (else empty)
    above: tuple[str, ...] = ()
    below: tuple[str, ...] = ()
    blocks: tuple[str, ...] = ()
    #: the whole file is the conflict (add-file, rename-file, delete-file): its resolution replaces it
    whole: bool = False


def load(root: Path) -> list[Marked]:
    """The conflicts waiting in the tree at ``root``; untrusted like the apply record."""
    path = root / STATE_PATH
    why = not_a_real_folder(path.parent) or (
        f"it is a symbolic link (to {os.readlink(path)})" if path.is_symlink() else None
    )
    if why:
        raise ConflictStateDamaged(path, why)
    if not path.is_file():
        return []
    try:
        raw: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["conflicts"]
        fields: list[dict[str, Any]] = [{k: tuple(v) if isinstance(v, list) else v for k, v in m.items()} for m in raw]
        found = [Marked(**f) for f in fields]
    except (ValueError, KeyError, TypeError) as exc:
        raise ConflictStateDamaged(path, str(exc)) from None
    for m in found:
        problem = why_outside(root, m.path) if isinstance(m.path, str) and m.path else "is not a path"
        folder = in_metadata(m.path) if not problem else None
        if problem or folder:
            why = problem or f"is in {folder}"
            raise ConflictStateDamaged(path, f"patch {m.patch!r} names {m.path!r}, which {why}")
    return found


def refuse_pending(root: Path) -> None:
    pending = load(root)
    if pending:
        raise ConflictsPending(root, [f"{m.patch} in {m.path}" for m in pending])


def to_bytes(marked: list[Marked]) -> str:
    return json.dumps({"format": 1, "conflicts": [asdict(m) for m in marked]}, indent=2) + "\n"


def mark(plan: Plan, patchsets: list[Patchset]) -> None:
    """Write each conflicting patch of ``plan`` at its candidate place with markers (in the plan,
    not on disk); a conflict with no candidate stays a conflict, its reason saying why."""
    from patchctl.patchsets.kinds import marking

    by_key = {(ps.name, p.id): p for ps in patchsets for p in ps.patches}
    chosen: dict[str, list[tuple[marking.Place, Patch, PatchResult]]] = {}
    why_not: dict[tuple[str, str], str] = {}
    tree = plan.reader
    for r in plan.results:
        patch = by_key.get((r.patchset, r.patch))
        if r.status is not Outcome.CONFLICT or patch is None or r.path is None:
            continue
        found = marking.propose(tree.read_for(patch, r.path), patch, r.path, tree.confined)
        taken = chosen.setdefault(r.path, [])
        if isinstance(found, str):
            said = "no conflict markers: " in r.reason  # plan says it for the kinds with no place
            why_not[(r.patchset, r.patch)] = r.reason if said else f"{r.reason}; no conflict markers: {found}"
        else:
            # refresh cuts conflicts apart by the untouched lines between them: one line at least
            near = [
                q
                for c, q, _ in taken
                if found.whole or c.whole or not (found.last + 1 < c.first or found.first > c.last + 1)
            ]
            if near:
                why_not[(r.patchset, r.patch)] = (
                    f"{r.reason}; no conflict markers: its place overlaps or touches that of {near[0].id}, "
                    "which has them; resolve and refresh that one, then apply again"
                )
            else:
                taken.append((found, patch, r))
    reasons: dict[tuple[str, str], str] = {}
    marked: list[Marked] = []
    for rel, places in chosen.items():
        if places:
            patch = places[0][1]
            text, mine = _write(tree.read_for(patch, rel) or "", rel, sorted(places, key=lambda f: f[0].first), plan)
            tree.write(rel, text, None)
            marked += mine
            for c, _patch, r in places:
                reasons[(r.patchset, r.patch)] = (
                    f"written with conflict markers at {c.how} (upstream, the patch's original, its change): "
                    f"edit them, then run `patchctl refresh`; was: {r.reason}"
                )
    if marked:
        tree.write(STATE_PATH, to_bytes(marked), None)
    plan.results = [
        replace(r, status=Outcome.CONFLICT_MARKED, reason=reasons[(r.patchset, r.patch)])
        if (r.patchset, r.patch) in reasons
        else replace(r, reason=why_not[(r.patchset, r.patch)])
        if (r.patchset, r.patch) in why_not
        else r
        for r in plan.results
    ]


def _write(
    text: str, rel: str, found: list[tuple[marking.Place, Patch, PatchResult]], plan: Plan
) -> tuple[str, list[Marked]]:
    from patchctl.patchsets.kinds import marking

    lines = split_lines(text)
    if lines and not lines[-1].endswith("\n") and any(c.last == len(lines) for c, _, _ in found):
        lines[-1] += "\n"  # a marker line after the file's last line must not join it
    out: list[str] = []
    pending: list[tuple[list[str], Patch, PatchResult, str, marking.Place]] = []
    at = 1
    for c, patch, r in found:
        gap = lines[at - 1 : c.first - 1]
        upstream = lines[c.first - 1 : c.last]
        where = f"lines {c.first}-{c.last}" if c.last >= c.first else f"before line {c.first}"
        original = "the patch's original" if c.ours else "the patch's original (none kept: empty)"
        out += [
            *gap,
            f"<<<<<<< upstream: {rel} {where}\n",
            *upstream,
            f"||||||| {patch.id}: {original}\n",
            *split_lines(marking.ended(c.ours)),
            "=======\n",
            *split_lines(marking.ended(c.theirs)),
            f">>>>>>> {patch.id}: the patch's change\n",
        ]
        pending.append((gap, patch, r, "".join(upstream), c))
        at = c.last + 1
    out += lines[at - 1 :]
    gaps = [g for g, *_ in pending] + [lines[at - 1 :]]
    version = plan.target.version or ""
    marked = [
        Marked(
            r.patchset,
            patch.id,
            rel,
            up,
            c.indent,
            len(gap),
            digest(gap),
            len(gaps[i + 1]),
            digest(gaps[i + 1]),
            version,
            c.above,
            c.below,
            c.blocks,
            c.whole,
        )
        for i, (gap, patch, r, up, c) in enumerate(pending)
    ]
    return "".join(out), marked
