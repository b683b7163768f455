"""Planning an apply: every patch's codemod run in memory, one outcome per patch.

Pure: nothing is written. Patches touching one file see each other's output through the
plan's :class:`~patchctl.patchsets.reader.TreeReader`; :mod:`patchctl.patchsets.write` writes
a plan all-or-nothing.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field, replace

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from patchctl import fsutil
from patchctl.patchsets import loads, needs
from patchctl.patchsets import record as rec
from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.kinds.base import Context, Edit, EditStatus
from patchctl.patchsets.model import Outcome, Patch, PatchResult, Patchset, Presence
from patchctl.patchsets.reader import TreeReader, assess, to_bytes
from patchctl.quoting import quote_path
from patchctl.target import Target


@dataclass
class Plan:
    target: Target
    results: list[PatchResult] = field(default_factory=list)
    #: relative path -> text after the plan (None: delete)
    after: dict[str, str | None] = field(default_factory=dict)
    #: relative path -> text before the plan (None: did not exist)
    before: dict[str, str | None] = field(default_factory=dict)
    modes: dict[str, int] = field(default_factory=dict)
    record: rec.Record | None = None
    record_changed: bool = False

    @property
    def reader(self) -> TreeReader:
        """A reader through this plan's pending changes; writes through it land in the plan."""
        return TreeReader(self.target, self.after, self.before, self.modes)

    @property
    def ok(self) -> bool:
        return not any(isinstance(r.status, Outcome) and r.status.is_failure for r in self.results)

    def hold_back(self) -> None:
        """When the change is refused as a whole, no row may claim it was applied or reverted."""
        if self.ok:
            return
        verb = {
            Outcome.APPLIED: "applied",
            Outcome.REVERTED: "reverted",
            Outcome.CONFLICT_MARKED: "written with conflict markers",
        }
        self.results = [
            PatchResult(
                r.patchset,
                r.patch,
                Outcome.HELD_BACK,
                r.path,
                f"would be {verb[r.status]}, but nothing was written: see the conflicts",
            )
            if isinstance(r.status, Outcome) and r.status in verb
            else r
            for r in self.results
        ]

    @property
    def changed_paths(self) -> list[str]:
        return sorted(p for p in self.after if self.after[p] != self.before[p])

    def diff(self) -> str:
        return "".join(Plan.unified(p, self.before[p], self.after[p]) for p in self.changed_paths)

    @staticmethod
    def unified(path: str, a: str | None, b: str | None) -> str:
        import difflib  # here: only --diff and a dry run's diff show one (issue 39.13)

        out = difflib.unified_diff(
            (a or "").splitlines(keepends=True),
            (b or "").splitlines(keepends=True),
            quote_path(f"a/{path}") if a is not None else "/dev/null",
            quote_path(f"b/{path}") if b is not None else "/dev/null",
        )
        return "".join(ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in out)


def _drop_note(patch: Patch, version: str | None) -> str:
    spec = patch.meta.get("drop_when")
    try:
        if spec and version and Version(version) in SpecifierSet(spec):
            return f" (past drop_when {spec}: consider removing this patch)"
    except InvalidVersion:
        pass
    return ""


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def plan_apply(target: Target, patchsets: list[Patchset], only: set[str] | None = None) -> Plan:
    """Plan every patch (of ``only``, when given). A patch whose ``needs`` did not apply is held
    back and the rest planned again without it, until no such patch is left (each round holds
    back at least one, so this ends); an applied patch whose user did not apply gets a warning."""
    held: dict[tuple[str, str], str] = {}
    while True:
        plan = _plan(target, patchsets, only, held)
        more = needs.unmet(patchsets, plan.results)
        if not more:
            break
        held.update(more)
    warn = needs.orphaned(patchsets, plan.results)
    plan.results = [
        replace(r, reason=f"{r.reason}; {warn[(r.patchset, r.patch)]}") if (r.patchset, r.patch) in warn else r
        for r in plan.results
    ]
    return plan


def _plan(target: Target, patchsets: list[Patchset], only: set[str] | None, held: dict[tuple[str, str], str]) -> Plan:
    old = rec.load(target.root)
    new_record = old or rec.Record(target.version, target.commit)
    plan = Plan(target, record=new_record)
    tree = plan.reader
    for ps in patchsets:
        for patch in ps.patches:
            if only and patch.id not in only:
                continue
            why = held.get((ps.name, patch.id))
            plan.results.append(
                PatchResult(ps.name, patch.id, Outcome.HELD_BACK, None, why)
                if why is not None
                else _apply_one(ps, patch, tree, new_record)
            )
    if any(r.status is Outcome.APPLIED for r in plan.results):
        for ps in patchsets:
            new_record.patchsets[ps.name] = {"digest": ps.digest, "source": "builtin" if ps.builtin else str(ps.root)}
        plan.record_changed = True
    return plan


def _no_place(kind: str) -> str | None:
    """Why ``kind`` gets no conflict markers (:data:`~patchctl.patchsets.kinds.marking.NO_PLACE`);
    None where it gets them. Asked only for a conflict: marking and its gap-text helpers are
    ``apply --conflicts=markers``' business, not every apply's start-up (issue 39.13)."""
    from patchctl.patchsets.kinds import marking

    return marking.NO_PLACE.get(kind)


def _apply_one(ps: Patchset, patch: Patch, tree: TreeReader, record: rec.Record) -> PatchResult:
    def result(status: Outcome, path: str | None, reason: str, detail: str = "") -> PatchResult:
        if status is Outcome.CONFLICT and (no_place := _no_place(patch.kind)) is not None:  # matrix's line too
            reason += f"; no conflict markers: {no_place}"
        return PatchResult(ps.name, patch.id, status, path, reason + _drop_note(patch, tree.target.version), detail)

    a = assess(patch, tree, ps.root)
    if a.skip is not None or a.found is None or a.path is None:
        return result(Outcome.NOT_APPLICABLE, None, a.skip or "")
    path, found = a.path, a.found
    if found.presence is Presence.PRESENT:
        return result(Outcome.ALREADY_APPLIED, path, found.reason)
    if found.presence is Presence.MODIFIED:
        return result(Outcome.CONFLICT, path, f"{found.reason}; restore it or revert the file", found.detail)
    if a.superseded:
        return result(Outcome.SUPERSEDED_UPSTREAM, path, a.superseded)
    text = tree.read_for(patch, path)
    edit = KINDS[patch.kind].apply(text, patch, Context(ps.root, path, read=tree.confined, mode_of=tree.mode_of))
    note = ""
    if edit.status is EditStatus.CHANGED:
        broken, note = _still_loads(path, text, edit, tree)
        if broken is not None:
            how = "" if _no_place(patch.kind) is not None else " (apply --conflicts=markers shows it there)"
            return result(
                Outcome.CONFLICT,
                path,
                f"{broken.after()}; the change is not made: put it where it belongs by hand{how}",
                Plan.unified(broken.path, tree.read(broken.path, binary=True), _new_text(broken.path, path, edit)),
            )
        before = tree.before.get(path, text)
        tree.write(path, edit.text, edit.mode)
        for other, other_text, other_mode in edit.also:
            tree.write(other, other_text, other_mode)
        entry = rec.Entry(
            ps.name,
            patch.id,
            patch.kind,
            path,
            fsutil.sha256_bytes(to_bytes(before)) if before is not None else None,
            None,
            _now(),
            edit.undo,
        )
        record.entries = [e for e in record.entries if not (e.patchset == ps.name and e.patch == patch.id)] + [entry]
    return result(edit.status.outcome(), path, edit.reason + note, edit.detail)


def _new_text(rel: str, path: str, edit: Edit) -> str | None:
    return edit.text if rel == path else next(t for o, t, _ in edit.also if o == rel)


def _still_loads(path: str, text: str | None, edit: Edit, tree: TreeReader) -> tuple[loads.Problem | None, str]:
    """The one place every apply path (apply, --dry-run, matrix, markers, drift, capture's proof)
    has a patch's final text before anything is written: a file the change leaves broken makes
    the patch a conflict (issue 38). A file that did not load before it either is upstream's
    doing: only noted. Returns (what breaks, the note)."""
    note = ""
    for rel in (path, *(o for o, _, _ in edit.also)):
        old = text if rel == path else tree.read(rel, binary=True)
        broken = loads.check(rel, _new_text(rel, path, edit), old)
        if broken is not None and not broken.already:
            return broken, ""
        if broken is not None:
            note += f"; note: {broken}, before the change too (as upstream ships it)"
    return None, note
