"""``--repo`` for apply, matrix and drift: the patches placed directly fail, so carry them along history.

The planner (:func:`~patchctl.patchsets.plan.plan_apply`) runs first, as without ``--repo``. Each
in-place patch it could not place (conflict, ambiguous, not-applicable) is then planned alone on
its base commit, and that edit walked to the target's commit (:mod:`~.walk`). An edit the walk
brings to the target becomes a text hunk anchored on the target's own lines, at the path the
code moved to, and the whole plan is made again through the planner, so the load check, the
``needs`` of the other patches, the record and the write are the ones every apply has. An edit
whose anchor upstream removed is ``not-applicable``, naming the commit and where the code went.

A patch's base is the commit its ``captured_against`` names (a commit id, or ``verl X.Y.Z`` for the
tag ``vX.Y.Z``), else the one the caller gives (drift's ``--from``); the target's commit is the
tree's own HEAD when the repository has it, else the tag of its verl version.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from patchctl import fsutil
from patchctl.confine import in_metadata, relative_inside
from patchctl.drift.probe import ALWAYS, files_of
from patchctl.errors import PatchctlError
from patchctl.patchsets import needs
from patchctl.patchsets import record as rec
from patchctl.patchsets.history import disk
from patchctl.patchsets.history.upstream import Upstream
from patchctl.patchsets.history.walk import Carried, walk
from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.kinds.text_hunk import Params as HunkParams
from patchctl.patchsets.kinds.text_hunk import shared_ends
from patchctl.patchsets.model import Outcome, Patch, PatchResult, Patchset
from patchctl.patchsets.plan import Plan, plan_apply
from patchctl.patchsets.reader import to_bytes
from patchctl.target import Target, read_version

#: outcomes the walk is asked about: those where the planner found no place
RETRY = (Outcome.CONFLICT, Outcome.AMBIGUOUS, Outcome.NOT_APPLICABLE)
#: lines of context around a carried edit
CONTEXT = 3
_HEX = re.compile(r"\b[0-9a-f]{7,40}\b")
_VERSION = re.compile(r"^verl\s+(\S+)$")


@dataclass(frozen=True)
class Base:
    """A patch's edit on its base commit: upstream's file and the file with the edit alone in it."""

    commit: str
    path: str
    upstream: str
    patched: str


class NoTargetCommit(PatchctlError):
    """``--repo`` given, but the tree patched is no commit of it."""

    def __init__(self, repo: Path, label: str, version: str | None) -> None:
        self.repo, self.label = repo, label
        tag = f", nor is there a tag v{version}" if version else ""
        super().__init__(
            f"--repo {repo}: the target {label} is no commit of it{tag}; pass the verl clone the target "
            "was checked out from (fetched up to it), or leave out --repo"
        )


class History:
    """The walks of one command, sharing one :class:`Upstream` (and its caches) across versions."""

    def __init__(self, repo: Path, base: str | None = None, strict: bool = True) -> None:
        self.up = Upstream(repo)
        #: the base for patches whose ``captured_against`` names no commit of the repository
        self.base = base
        #: a target that is no commit of the repository is an error (apply), else a note (matrix)
        self.strict = strict
        self._bases: dict[tuple[str, str, str], Base | str] = {}
        self._walks: dict[tuple[str, str, str, str], Carried] = {}
        #: one scratch tree per base commit, holding the files its patches read (:meth:`_tree_of`)
        self._scratch = tempfile.TemporaryDirectory(prefix="patchctl-bases-")
        self._trees: dict[str, Path] = {}
        self._written: dict[str, set[str]] = {}

    def close(self) -> None:
        self.up.close()
        self._scratch.cleanup()

    def base_of(self, patch: Patch) -> str | None:
        said = patch.meta.get("captured_against", "")
        tries = _HEX.findall(said)
        found = _VERSION.match(said.strip())
        if found:
            tries += [f"v{found.group(1)}", found.group(1)]
        elif said and " " not in said.strip():
            tries.append(said.strip())
        for ref in tries:
            sha = self.up.commit_of(ref)
            if sha:
                return sha
        return self.up.commit_of(self.base) if self.base else None

    def commit_of(self, target: Target) -> str | None:
        """The upstream commit ``target`` is: its HEAD when the repository has it, else its version's tag."""
        for ref in (target.commit, *((f"v{target.version}", target.version) if target.version else ())):
            sha = self.up.commit_of(ref) if ref else None
            if sha:
                return sha
        return None

    def plan(self, target: Target, patchsets: list[Patchset], only: set[str] | None = None) -> Plan:
        """:func:`plan_apply`, with the patches it could not place carried along history."""
        plan = plan_apply(target, patchsets, only)
        commit = self.commit_of(target)
        if commit is None and self.strict:
            raise NoTargetCommit(self.up.repo, target.label, target.version)
        carried: dict[tuple[str, str], tuple[Carried, Patch]] = {}
        notes: dict[tuple[str, str], str] = {}
        for r in plan.results:
            ps = next(s for s in patchsets if s.name == r.patchset)
            patch = ps.get(r.patch)
            if r.status not in RETRY or patch is None or KINDS[patch.kind].creates_target:
                continue
            base = self.base_of(patch)
            if commit is None or base is None:
                said = patch.meta.get("captured_against", "nothing")
                notes[(ps.name, patch.id)] = (
                    f"not carried along history: {self.up.repo} has no commit for this version"
                    if commit is None
                    else f"not carried along history: its captured_against ({said}) names no commit of {self.up.repo}"
                )
                continue
            found = self._carry(ps, patch, base, commit)
            if isinstance(found, str):
                notes[(ps.name, patch.id)] = f"not carried along history: {found}"
            elif found is not None:
                carried[(ps.name, patch.id)] = (found, patch)
        placed: dict[tuple[str, str], Patch] = {}
        for k, (c, p) in carried.items():
            moved = _reanchored(p, c) if c.status == "placed" else None
            if moved is not None:
                placed[k] = moved
        if not carried:
            plan.results = [_noted(r, notes) for r in plan.results]
            return plan
        while placed:
            sets = [
                replace(ps, patches=tuple(placed.get((ps.name, p.id)) or p for p in ps.patches)) for ps in patchsets
            ]
            ids = {k[1] for k in placed}
            again = _on_top(plan, target, sets, only, ids) or _again(plan, target, sets, only, ids)
            was = {(r.patchset, r.patch): r.status for r in plan.results}
            worse = [
                r
                for r in again.results
                if was[(r.patchset, r.patch)] in needs.IN_TREE
                and r.status not in needs.IN_TREE
                and (r.patchset, r.patch) not in placed
            ]
            if not worse:
                plan = again
                break
            # a carried edit that breaks a patch placed without it stays out (the one it breaks came first)
            hit = {rel for r in worse for rel in ((r.path,) if r.path else ())}
            drop = {k for k, p in placed.items() if hit & set(p.target)} or set(placed)
            for k in drop:
                names = ", ".join(r.patch for r in worse)
                notes[k] = (
                    f"along upstream history it goes to {placed[k].target[0]}, but placed there it breaks {names}"
                )
            placed = {k: v for k, v in placed.items() if k not in drop}
        plan.results = [
            _noted(_said(r, carried.get((r.patchset, r.patch)), (r.patchset, r.patch) in placed), notes)
            for r in plan.results
        ]
        return plan

    def recorded(self, target: Target, patchsets: list[Patchset]) -> list[Patchset]:
        """``patchsets`` with each patch that ``apply --repo`` carried to ``target`` (its record says
        so: another kind than the manifest's) as it was carried, for ``revert`` and ``verify``."""
        record = rec.load(target.root)
        commit = self.commit_of(target)
        if record is None or commit is None:
            return patchsets
        out = []
        for ps in patchsets:
            patches = []
            for p in ps.patches:
                entry = record.find(ps.name, p.id)
                base = self.base_of(p) if entry is not None and entry.kind != p.kind else None
                found = self._carry(ps, p, base, commit) if base is not None else None
                again = _reanchored(p, found) if isinstance(found, Carried) and found.status == "placed" else None
                patches.append(again or p)
            out.append(replace(ps, patches=tuple(patches)))
        return out

    def _carry(self, ps: Patchset, patch: Patch, base: str, target: str) -> Carried | str | None:
        """The walk from ``base`` to ``target``; a string says why there is none."""
        if base == target:
            return None
        key = (ps.digest, patch.id, base, target)
        if key not in self._walks:
            start = self._base(ps, patch, base)
            if isinstance(start, str):
                return start
            k = disk.key(base, target, start.path, start.upstream, start.patched)
            found = disk.load(k, self.up, start.patched)
            if found is None:
                found = walk(self.up, base, target, start.path, start.upstream, start.patched)
                disk.save(k, found)
            self._walks[key] = found
        return self._walks[key]

    def _base(self, ps: Patchset, patch: Patch, sha: str) -> Base | str:
        """The patch planned alone on the files it reads at ``sha`` (cached: every version shares it)."""
        key = (ps.digest, patch.id, sha)
        if key not in self._bases:
            self._bases[key] = self._plan_alone(ps, patch, sha)
        return self._bases[key]

    def _plan_alone(self, ps: Patchset, patch: Patch, sha: str) -> Base | str:
        root = self._tree_of(sha)
        for rel in dict.fromkeys((*ALWAYS, *files_of(patch, ps.manifest))):
            dest = root / rel
            if rel in self._written[sha]:
                continue
            self._written[sha].add(rel)
            text = self.up.read(sha, rel)
            if text is not None:
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(text.encode("utf-8", "surrogateescape"))
        if not (root / "verl" / "__init__.py").is_file():
            return "the base is not a verl tree"
        # built, not opened: open_tree asks git about a folder that is no repository (issue 38 req 8)
        tree = Target(root, read_version(root), sha[:12], sha, False)
        try:
            plan = plan_apply(tree, [replace(ps, patches=(patch,))])
        except PatchctlError as exc:
            return str(exc)
        r = plan.results[-1]
        if r.status is not Outcome.APPLIED or r.path is None or plan.after.get(r.path) is None:
            return f"it is {r.status.value} on its base {sha[:12]}"
        upstream = self.up.read(sha, r.path)
        patched = plan.after[r.path]
        if upstream is None or patched is None:
            return "no file on its base"
        return Base(sha, r.path, upstream, patched)

    def _tree_of(self, sha: str) -> Path:
        """The scratch tree of commit ``sha``: the files its patches read, each written once.

        Planning never writes into it, so every patch planned alone on ``sha`` shares it; a
        file is only ever one of ``sha``'s own blobs, so one patch's files are those it would
        find in a tree of its own."""
        if sha not in self._trees:
            self._trees[sha] = Path(tempfile.mkdtemp(prefix=f"base-{sha[:12]}-", dir=self._scratch.name))
            self._written[sha] = set()
        return self._trees[sha]


def _on_top(plan: Plan, target: Target, sets: list[Patchset], only: set[str] | None, placed: set[str]) -> Plan | None:
    """The carried patches planned on the first plan's own output, the rest kept as planned;
    None when one of them does not apply there (:func:`_again` then plans their files again).

    Planned with them are the users the first plan held back, transitively, for want of them
    (a freed user). Every other patch keeps its outcome and its text: re-planning the files
    the carried patches touch (what :func:`_again` does) costs as much as the first plan of
    those files (issue 38 req 8). The plan runs in a scratch tree holding, for each file those
    patches read, the first plan's text of it, so its ``after`` holds their changes on top."""
    held = {r.patch for r in plan.results if r.status is Outcome.HELD_BACK}
    ids = placed | (needs.users(sets, placed) & held)
    if only is not None:
        ids &= only | placed
    reader = plan.reader
    with tempfile.TemporaryDirectory(prefix="patchctl-on-top-") as tmp:
        root = Path(tmp)
        for ps in sets:
            for p in ps.patches:
                if p.id not in ids:
                    continue
                for rel in files_of(p, ps.manifest):
                    text = reader.read(rel, binary=True)
                    if text is None or (root / rel).exists():
                        continue
                    dest = root / rel
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(to_bytes(text))
                    mode = reader.mode_of(rel)
                    if mode is not None:
                        dest.chmod(mode)
        top = plan_apply(replace(target, root=root, is_git=False), sets, ids)
    done = {(r.patchset, r.patch): r for r in top.results}
    if any(r.patch in placed and r.status not in needs.IN_TREE for r in top.results):
        return None
    before = {rel: plan.before.get(rel, text) for rel, text in top.before.items()}
    record = plan.record
    if record is not None and top.record is not None:
        # an entry's "before" is the file as upstream shipped it, as for every patch of the first plan
        fresh = [replace(e, sha256_before=_sha(before[e.path])) if e.path in before else e for e in top.record.entries]
        fresh = [e for e in fresh if e.patch in ids]
        record = replace(
            record,
            entries=[e for e in record.entries if e.patch not in ids] + fresh,
            patchsets={**record.patchsets, **top.record.patchsets},
        )
    return Plan(
        target,
        [done.get((r.patchset, r.patch), r) for r in plan.results],
        {**plan.after, **top.after},
        {**plan.before, **before},
        {**plan.modes, **top.modes},
        record if record is not None else top.record,
        plan.record_changed or top.record_changed,
    )


def _again(plan: Plan, target: Target, sets: list[Patchset], only: set[str] | None, placed: set[str]) -> Plan:
    """The plan made again for the files the carried patches touch, the rest kept as planned.

    Re-planned are the patches on those files, and, until nothing is added, those on the files
    of every patch they need or that needs them (a held-back partner frees its users): each file
    is planned whole, by every patch on it, so the two plans never both write one file."""
    patches = [(ps.name, p) for ps in sets for p in ps.patches if only is None or p.id in only]
    files = {rel for _n, p in patches if p.id in placed for rel in p.target}
    ids: set[str] = set()
    while True:
        grown = {p.id for _n, p in patches if files & set(p.target)}
        grown = needs.closure(sets, needs.users(sets, grown))
        if only is not None:
            grown &= only
        if grown == ids:
            break
        ids = grown
        files |= {rel for _n, p in patches if p.id in ids for rel in p.target}
    again = plan_apply(target, sets, ids)
    redone = {(r.patchset, r.patch): r for r in again.results}
    old, new = plan.record, again.record
    if old is not None and new is not None:
        old = replace(
            old,
            entries=[e for e in old.entries if e.patch not in ids] + [e for e in new.entries if e.patch in ids],
            patchsets={**old.patchsets, **new.patchsets},
        )
    kept = {rel: text for rel, text in plan.after.items() if rel not in files}
    return Plan(
        target,
        [redone.get((r.patchset, r.patch), r) for r in plan.results],
        {**kept, **again.after},
        {**{rel: t for rel, t in plan.before.items() if rel not in files}, **again.before},
        {**plan.modes, **again.modes},
        old if old is not None else new,
        plan.record_changed or again.record_changed,
    )


def _sha(text: str | None) -> str | None:
    return fsutil.sha256_bytes(to_bytes(text)) if text is not None else None


def _reanchored(patch: Patch, c: Carried) -> Patch | None:
    """The carried edit as a text hunk on the target's own lines, at the path it moved to."""
    up, mine = c.state.upstream.splitlines(keepends=True), c.state.patched.splitlines(keepends=True)
    if up == mine or relative_inside(c.state.path) or in_metadata(c.state.path):
        return None  # nothing left to place, or a path (from the repository's renames) that leaves the tree
    top, bottom = shared_ends(up, mine)
    start = max(0, top - CONTEXT)
    was = "".join(up[start : len(up) - max(0, bottom - CONTEXT)])
    now = "".join(mine[start : len(mine) - max(0, bottom - CONTEXT)])
    params = HunkParams(was, now, start + 1, 0, None)
    return replace(patch, kind="text-hunk", target=(c.state.path,), params=params)


def _noted(r: PatchResult, notes: dict[tuple[str, str], str]) -> PatchResult:
    note = notes.get((r.patchset, r.patch))
    return replace(r, reason=f"{r.reason}; {note}") if note else r


def _said(r: PatchResult, found: tuple[Carried, Patch] | None, placed: bool) -> PatchResult:
    """The result with what the walk found: how the edit came, or which commit stopped it."""
    if found is None:
        return r
    c, _patch = found
    steps = f"{c.state.merges} merge(s) along upstream history"
    moves = f"; {', '.join(c.state.moves)}" if c.state.moves else ""
    if placed:
        if r.status is not Outcome.APPLIED:
            return replace(r, reason=f"{r.reason} (carried by {steps}{moves})")
        at = c.state.path + (f":{c.state.scope}" if c.state.scope else "")
        return replace(r, reason=f"placed in {at}, carried from its base by {steps}{moves}")
    if c.status == "removed" and c.commit is not None:
        where = f"; the code went to {c.where}" if c.where else ""
        return replace(
            r,
            status=Outcome.NOT_APPLICABLE,
            path=c.state.path,
            reason=f"upstream removed {c.what} in commit {c.commit}{where}{moves}",
            detail="",
        )
    if c.status == "conflict" and c.commit is not None:
        went = f" (its code went to {c.where})" if c.where else ""
        why = f": {c.reason}" if c.reason else ""
        return replace(r, reason=f"{r.reason}; along upstream history it stops at commit {c.commit}{went}{why}{moves}")
    return r
