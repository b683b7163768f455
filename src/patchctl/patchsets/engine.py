"""Plan, then write: the engine that applies and reverts patchsets on a target tree.

``plan_apply``/``plan_revert`` are pure: they read the tree, run every patch's codemod in
memory (patches touching one file see each other's output) and return a :class:`Plan` with
one outcome per patch and the full set of file changes. ``execute`` writes a plan
all-or-nothing. The engine knows the patch kinds only through their registry.
"""

from __future__ import annotations

import datetime as _dt
import difflib
from dataclasses import dataclass, field
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from patchctl import fsutil, git
from patchctl.errors import CommitRefused, DirtyFiles, OutsideTree, PatchctlError, PatchFailed
from patchctl.patchsets import record as rec
from patchctl.patchsets import upstream
from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.kinds.base import Check, Context, EditStatus
from patchctl.patchsets.model import Outcome, Patch, Patchset, Presence
from patchctl.target import Target


@dataclass(frozen=True)
class PatchResult:
    patchset: str
    patch: str
    status: Outcome
    #: the file the patch looked at (relative to the tree), None when no candidate exists
    path: str | None
    reason: str
    #: a unified diff showing what differs, for conflicts
    detail: str = ""


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
    def ok(self) -> bool:
        return not any(r.status.is_failure for r in self.results)

    def hold_back(self) -> None:
        """When the change is refused as a whole, no row may claim it was applied or reverted."""
        if self.ok:
            return
        verb = {Outcome.APPLIED: "applied", Outcome.REVERTED: "reverted"}
        self.results = [PatchResult(r.patchset, r.patch, Outcome.HELD_BACK, r.path,
                                    f"would be {verb[r.status]}, but nothing was written: see the conflicts")
                        if r.status in verb else r for r in self.results]

    @property
    def changed_paths(self) -> list[str]:
        return sorted(p for p in self.after if self.after[p] != self.before[p])

    def diff(self) -> str:
        return "".join(Plan.unified(p, self.before[p], self.after[p]) for p in self.changed_paths)

    @staticmethod
    def unified(path: str, a: str | None, b: str | None) -> str:
        out = difflib.unified_diff(
            (a or "").splitlines(keepends=True), (b or "").splitlines(keepends=True),
            f"a/{path}" if a is not None else "/dev/null", f"b/{path}" if b is not None else "/dev/null")
        return "".join(ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in out)


class TreeReader:
    """Reads through the plan's pending changes, so later patches see earlier ones."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    def read(self, rel: str) -> str | None:
        if rel in self.plan.after:
            return self.plan.after[rel]
        path = self.plan.target.root / rel
        if not path.is_file():
            return None
        try:
            return path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise PatchctlError(f"{path}: not UTF-8 text; patchctl only patches text files") from None

    def write(self, rel: str, text: str | None, mode: int | None) -> None:
        if rel not in self.plan.before:
            self.plan.before[rel] = self.read(rel)
        self.plan.after[rel] = text
        if mode is not None:
            self.plan.modes[rel] = mode


def version_mismatch(patch: Patch, version: str | None) -> str | None:
    if not patch.versions or not version:
        return None
    try:
        if Version(version) in SpecifierSet(patch.versions):
            return None
    except InvalidVersion:
        return None
    return f"meant for verl {patch.versions}; this tree is verl {version}"


def locate(patch: Patch, tree: TreeReader) -> str | None:
    for rel in patch.target:
        try:
            fsutil.resolve_inside(tree.plan.target.root, rel)
        except OutsideTree as exc:
            raise OutsideTree(exc.root, exc.rel, exc.problem, patch.id) from None
    existing = [p for p in patch.target if tree.read(p) is not None]
    if existing:
        return existing[0]
    return patch.target[0] if KINDS[patch.kind].creates_target else None


@dataclass(frozen=True)
class Assessment:
    """Where a patch stands in a tree before anything is written.

    The steps ``apply`` and ``verify`` share, in their order: does the patch concern this tree
    (version, target file), what does its kind's postcondition say, and, when the change is not
    there, has upstream made it already.
    """

    path: str | None
    #: why the patch does not concern this tree, else None
    skip: str | None = None
    found: Check | None = None
    #: where upstream already has the change (only asked when the change is missing), else None
    superseded: str | None = None


def assess(patch: Patch, tree: TreeReader, patchset_root: Path) -> Assessment:
    path = locate(patch, tree)
    skip = version_mismatch(patch, tree.plan.target.version)
    if skip is None and path is None:
        skip = "none of its target files exists: " + ", ".join(patch.target)
    if skip is not None or path is None:
        return Assessment(path, skip)
    found = KINDS[patch.kind].check(tree.read(path), patch, Context(patchset_root, path))
    superseded = upstream.find(patch.upstream, path, tree.read, patch.tag) if found.presence is Presence.MISSING else None
    return Assessment(path, None, found, superseded)


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
    old = rec.load(target.root)
    new_record = old or rec.Record(target.version, target.commit)
    plan = Plan(target, record=new_record)
    tree = TreeReader(plan)
    for ps in patchsets:
        for patch in ps.patches:
            if only and patch.id not in only:
                continue
            plan.results.append(_apply_one(ps, patch, tree, new_record))
    if any(r.status is Outcome.APPLIED for r in plan.results):
        for ps in patchsets:
            new_record.patchsets[ps.name] = {"digest": ps.digest, "source": "builtin" if ps.builtin else str(ps.root)}
        plan.record_changed = True
    return plan


def _apply_one(ps: Patchset, patch: Patch, tree: TreeReader, record: rec.Record) -> PatchResult:
    def result(status: Outcome, path: str | None, reason: str, detail: str = "") -> PatchResult:
        return PatchResult(ps.name, patch.id, status, path, reason + _drop_note(patch, tree.plan.target.version), detail)

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
    text = tree.read(path)
    edit = KINDS[patch.kind].apply(text, patch, Context(ps.root, path))
    if edit.status is EditStatus.CHANGED:
        before = tree.plan.before.get(path, text)
        tree.write(path, edit.text, edit.mode)
        entry = rec.Entry(ps.name, patch.id, patch.kind, path,
                          fsutil.sha256_bytes(before.encode()) if before is not None else None,
                          None, _now(), edit.undo)
        record.entries = [e for e in record.entries if not (e.patchset == ps.name and e.patch == patch.id)] + [entry]
    return result(edit.status.outcome(), path, edit.reason, edit.detail)


def plan_revert(target: Target, patchsets: list[Patchset], only: set[str] | None = None) -> Plan:
    """Undo what the record says was applied, or, with no record, every patch found intact.

    Only a patch whose lines are intact is reverted. One edited by hand since apply is a
    conflict (the record is kept and nothing is written), because guessing which lines are
    whose would lose the user's edits.
    """
    old = rec.load(target.root)
    by_name = {ps.name: ps for ps in patchsets}
    plan = Plan(target, record=old)
    tree = TreeReader(plan)
    if old is None:
        entries = [rec.Entry(ps.name, p.id, p.kind, "", None, None, "") for ps in patchsets for p in ps.patches]
    else:
        missing = sorted({e.patchset for e in old.entries} - set(by_name))
        if missing:
            raise PatchctlError(f"{target.root}: the apply record lists patchset {missing[0]!r}; "
                                "pass it with --patchset DIR to revert it")
        entries = list(old.entries)
    befores: dict[str, set[str | None]] = {}
    for e in entries:
        befores.setdefault(e.path, set()).add(e.sha256_before)
    removed_whole = _files_removed_whole(entries, by_name, tree, only)
    kept: list[rec.Entry] = []
    for entry in reversed(entries):
        patch = by_name[entry.patchset].get(entry.patch) if entry.patchset in by_name else None
        if patch is None or (only and entry.patch not in only):
            if old is not None:
                kept.insert(0, entry)
            continue
        path = entry.path or locate(patch, tree)
        if path is None:
            continue
        if not KINDS[patch.kind].creates_target and path in removed_whole:
            continue  # the patch that added this file takes these lines with it
        result = _revert_one(patch, entry, path, tree, befores.get(entry.path, set()), by_name[entry.patchset].root,
                             recorded=old is not None)
        if result is None:
            continue
        plan.results.append(result)
        if result.status.is_failure:
            kept.insert(0, entry)
    plan.results.reverse()
    if old is not None:
        old.entries = kept
        plan.record_changed = True
    return plan


def _files_removed_whole(entries: list[rec.Entry], by_name: dict[str, Patchset], tree: TreeReader,
                         only: set[str] | None) -> set[str]:
    """Files an intact add-file patch will delete: other patches' lines in them go with the file."""
    out = set()
    for e in entries:
        patch = by_name[e.patchset].get(e.patch) if e.patchset in by_name else None
        if patch is None or (only and e.patch not in only) or not KINDS[patch.kind].creates_target:
            continue
        path = e.path or locate(patch, tree)
        if path is not None and _check(patch, path, tree, by_name[e.patchset].root, e.undo).presence is Presence.PRESENT:
            out.add(path)
    return out


def _check(patch: Patch, path: str, tree: TreeReader, root: Path, undo: dict | None = None) -> Check:
    return KINDS[patch.kind].check(tree.read(path), patch, Context(root, path, undo))


def _revert_one(patch: Patch, entry: rec.Entry, path: str, tree: TreeReader, befores: set[str | None],
                patchset_root: Path, *, recorded: bool) -> PatchResult | None:
    ctx = Context(patchset_root, path, entry.undo)
    kind = KINDS[patch.kind]
    text = tree.read(path)
    found = kind.check(text, patch, ctx)

    def result(status: Outcome, reason: str, detail: str = "") -> PatchResult:
        return PatchResult(entry.patchset, entry.patch, status, path, reason, detail)

    def committed() -> str:  # asked only for a conflict: one git call
        return git.diff_file(tree.plan.target.root, path) if tree.plan.target.is_git else ""

    if found.presence is Presence.MODIFIED:
        return result(Outcome.CONFLICT, f"{found.reason}: edited since it was applied; restore its lines "
                      f"(git diff {path}) or leave it out with --only, then revert again", found.detail or committed())
    if found.presence is Presence.MISSING:
        if not recorded:
            return None
        now = fsutil.sha256_bytes(text.encode()) if text is not None else None
        if now in befores or (text is None and kind.creates_target):
            return result(Outcome.NOT_APPLIED, f"{path} is already back to what it was before apply")
        edit = kind.apply(text, patch, ctx)
        if edit.status is EditStatus.CHANGED:
            detail, shows = Plan.unified(path, text, edit.text), "the diff shows what apply wrote"
        else:
            detail = edit.detail or found.detail or committed()
            shows = f"{edit.reason}; the diff shows the file against its last commit" if detail else edit.reason
        return result(Outcome.CONFLICT, f"{path} changed since apply and the patch's lines are not intact there "
                      f"(edited by hand?): {shows}; restore them or leave the patch out with --only, "
                      "then revert again", detail)
    if found.presence is not Presence.PRESENT:
        return None
    edit = kind.revert(text, patch, ctx)
    if edit.status is EditStatus.CHANGED:
        tree.write(path, edit.text, None)
        return result(Outcome.REVERTED, edit.reason)
    if edit.status is EditStatus.NOT_APPLICABLE:
        return result(Outcome.NOT_APPLIED, edit.reason)
    return result(edit.status.outcome(), edit.reason, edit.detail)


@dataclass(frozen=True)
class Written:
    paths: list[str]
    commit: str | None = None
    branch: str | None = None


def check_can_commit(root: Path, is_git: bool, branch: str) -> None:
    """Everything ``--commit`` needs, asked before a file is written (never after)."""
    if not is_git:
        raise CommitRefused(root, "it is not a git repository", "run `git init` there first, or drop --commit")
    if git.branch_exists(root, branch):
        raise CommitRefused(root, f"branch {branch!r} already exists", "delete it or pass --branch NAME")
    if not git.has_committer(root):
        raise CommitRefused(root, "git has no identity to commit with",
                            'run git config --global user.name "Your Name" and git config --global user.email you@example.com')


def execute(plan: Plan, *, force: bool = False, commit_branch: str | None = None, message: str = "",
            command: str = "apply") -> Written:
    """Write the plan all-or-nothing (refusing dirty files unless ``force``); maybe commit it.

    With ``commit_branch`` the commit is part of the change: when git refuses it (a hook, say),
    the files are put back too, so a retry starts from the same tree.
    """
    if not plan.ok:
        bad = [r for r in plan.results if r.status.is_failure]
        raise PatchFailed(f"{bad[0].patch}: {bad[0].status.value} in {bad[0].path}: {bad[0].reason}; "
                          f"nothing was written ({len(bad)} patch(es) failed)")
    root = plan.target.root
    if commit_branch:
        check_can_commit(root, plan.target.is_git, commit_branch)
    changes = {p: fsutil.FileChange(p, None if plan.after[p] is None else plan.after[p].encode(), plan.modes.get(p))
               for p in plan.changed_paths}
    if not changes:
        return Written([])
    record = plan.record
    if plan.record_changed and record is not None:
        for e in record.entries:
            text = plan.after.get(e.path)
            if e.sha256_after is None or e.path in changes:
                e.sha256_after = fsutil.sha256_bytes(text.encode()) if text is not None else None
        content = record.to_bytes() if record.entries else None
        if content is not None or (root / rec.RECORD_PATH).exists():
            changes[rec.RECORD_PATH] = fsutil.FileChange(rec.RECORD_PATH, content)
    if plan.target.is_git and not force:
        _refuse_dirty(plan, [p for p in changes if p != rec.RECORD_PATH])
    shas: list[str] = []
    commit = (lambda: shas.append(git.commit_on_branch(root, commit_branch, sorted(changes), message))) \
        if commit_branch else None
    fsutil.write_all(root, changes, command=command, before_commit=commit)
    return Written(sorted(changes), shas[0] if shas else None, commit_branch if shas else None)


def _refuse_dirty(plan: Plan, paths: list[str]) -> None:
    """Files with uncommitted changes may not be overwritten, unless patchctl wrote them itself."""
    dirty = git.dirty(plan.target.root, paths)
    record = rec.load(plan.target.root)
    ours = set()
    if record:
        for e in record.entries:
            f = plan.target.root / e.path
            if e.sha256_after and f.is_file() and fsutil.sha256_file(f) == e.sha256_after:
                ours.add(e.path)
    theirs = [p for p in dirty if p not in ours and plan.before.get(p) is not None]
    if theirs:
        raise DirtyFiles(theirs)
