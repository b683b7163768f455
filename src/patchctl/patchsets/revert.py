"""Planning a revert: undo what the record says was applied, or every patch found intact.

Only a patch whose lines are intact is reverted. One edited by hand since apply is a
conflict, because guessing which lines are whose would lose the user's edits.
"""

from __future__ import annotations

from pathlib import Path

from patchctl import fsutil
from patchctl.errors import PatchsetNotGiven
from patchctl.patchsets import record as rec
from patchctl.patchsets.kinds import KINDS, replay
from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.model import Outcome, Patch, PatchResult, Patchset, Presence
from patchctl.patchsets.plan import Plan
from patchctl.patchsets.reader import TreeReader, locate, to_bytes
from patchctl.records import replace
from patchctl.target import Target


def plan_revert(target: Target, patchsets: list[Patchset], only: set[str] | None = None) -> Plan:
    """Undo what the record says was applied, or, with no record, every patch found intact.

    Only a patch whose lines are intact is reverted. One edited by hand since apply is a
    conflict (the record is kept and nothing is written), because guessing which lines are
    whose would lose the user's edits.
    """
    old = rec.load(target.root)
    by_name = {ps.name: ps for ps in patchsets}
    plan = Plan(target, record=old)
    tree = plan.reader
    if old is None:
        entries = [rec.Entry(ps.name, p.id, p.kind, "", None, None, "") for ps in patchsets for p in ps.patches]
    else:
        missing = sorted({e.patchset for e in old.entries} - set(by_name))
        if missing:
            raise PatchsetNotGiven(target.root, missing[0])
        entries = list(old.entries)
    befores: dict[str, set[str | None]] = {}
    for e in entries:
        befores.setdefault(e.path, set()).add(e.sha256_before)
    removed_whole = _files_removed_whole(entries, by_name, tree, only)
    kept: list[rec.Entry] = []
    for entry in reversed(entries):
        patch = _patch_of(entry, by_name)
        if patch is None or (only and entry.patch not in only):
            if old is not None:
                kept.insert(0, entry)
            continue
        path = entry.path or locate(patch, tree)
        if path is None:
            continue
        if not KINDS[patch.kind].creates_target and path in removed_whole:
            continue  # the patch that added this file takes these lines with it
        result = _revert_one(
            patch,
            entry,
            path,
            tree,
            befores.get(entry.path, set()),
            by_name[entry.patchset].root,
            recorded=old is not None,
        )
        if result is None:
            continue
        plan.results.append(result)
        if isinstance(result.status, Outcome) and result.status.is_failure:
            kept.insert(0, entry)
    plan.results.reverse()
    if old is not None:
        old.entries = kept
        plan.record_changed = True
    return plan


def _committed(tree: TreeReader, rel: str) -> bool | None:
    """Whether the tree's last commit has ``rel``; None where the tree is no git checkout."""
    commit = tree.target.commit
    if not (tree.target.is_git and commit):
        return None
    from patchctl import git  # here: git, subprocess and its helpers are a conflict's (issue 39.13)

    return git.has_file_at(tree.target.root, commit, rel)


def _patch_of(entry: rec.Entry, by_name: dict[str, Patchset]) -> Patch | None:
    ps = by_name.get(entry.patchset)
    return ps.get(entry.patch) if ps is not None else None


def _files_removed_whole(
    entries: list[rec.Entry], by_name: dict[str, Patchset], tree: TreeReader, only: set[str] | None
) -> set[str]:
    """Files an intact add-file patch will delete: other patches' lines in them go with the file."""
    out = set()
    for e in entries:
        patch = _patch_of(e, by_name)
        kind = KINDS[patch.kind] if patch is not None else None
        if (
            patch is None
            or kind is None
            or (only and e.patch not in only)
            or not kind.creates_target
            or not getattr(kind, "takes_lines_along", True)
        ):
            continue
        path = e.path or locate(patch, tree)
        ctx = Context(by_name[e.patchset].root, path or "", e.undo, tree.confined)
        if path is not None and kind.check(tree.read_for(patch, path), patch, ctx).presence is Presence.PRESENT:
            out.add(path)
    return out


def _revert_one(
    patch: Patch,
    entry: rec.Entry,
    path: str,
    tree: TreeReader,
    befores: set[str | None],
    patchset_root: Path,
    *,
    recorded: bool,
) -> PatchResult | None:
    ctx = Context(patchset_root, path, entry.undo, tree.confined, tree.mode_of)
    kind = KINDS[patch.kind]
    text = tree.read_for(patch, path)
    found = kind.check(text, patch, ctx)
    if (
        not recorded
        and found.presence is not Presence.PRESENT
        and replay.dropped(text, patch, ctx, tree.target.version)
    ):
        return None  # the user kept upstream's text here (refresh): there is nothing of the patch to undo

    def result(status: Outcome, reason: str, detail: str = "") -> PatchResult:
        return PatchResult(entry.patchset, entry.patch, status, path, reason, detail)

    revert_by = getattr(kind, "revert_by", None)  # a kind whose record must agree with the last commit
    if revert_by is not None and found.presence is Presence.PRESENT:
        facts = revert_by(entry.undo, recorded, patch, ctx, lambda rel: _committed(tree, rel))
        if isinstance(facts, str):
            return result(Outcome.CONFLICT, facts)
        ctx = replace(ctx, undo=facts)

    def committed() -> str:  # asked only for a conflict: one git call
        from patchctl import git

        return git.diff_file(tree.target.root, path) if tree.target.is_git else ""

    if found.presence is Presence.MODIFIED:
        return result(
            Outcome.CONFLICT,
            f"{found.reason}: edited since it was applied; restore its lines "
            f"(git diff {path}) or leave it out with --only, then revert again",
            found.detail or committed(),
        )
    if found.presence is Presence.MISSING:
        if not recorded:
            return None
        now = fsutil.sha256_bytes(to_bytes(text)) if text is not None else None
        if now in befores or (text is None and kind.creates_target):
            return result(Outcome.NOT_APPLIED, f"{path} is already back to what it was before apply")
        edit = kind.apply(text, patch, ctx)
        if edit.status is EditStatus.CHANGED:
            detail, shows = Plan.unified(path, text, edit.text), "the diff shows what apply wrote"
        else:
            detail = edit.detail or found.detail or committed()
            shows = f"{edit.reason}; the diff shows the file against its last commit" if detail else edit.reason
        return result(
            Outcome.CONFLICT,
            f"{path} changed since apply and the patch's lines are not intact there "
            f"(edited by hand?): {shows}; restore them or leave the patch out with --only, "
            "then revert again",
            detail,
        )
    if found.presence is not Presence.PRESENT:
        return None
    edit = kind.revert(text, patch, ctx)
    if edit.status is EditStatus.CHANGED:
        tree.write(path, edit.text, edit.mode)
        for other, other_text, other_mode in edit.also:
            tree.write(other, other_text, other_mode)
        return result(Outcome.REVERTED, edit.reason)
    if edit.status is EditStatus.NOT_APPLICABLE:
        return result(Outcome.NOT_APPLIED, edit.reason)
    return result(edit.status.outcome(), edit.reason, edit.detail)
