"""Capture's proof, and the blame when it fails: which patch, and why.

The staged patchset is applied to BASE by the engine, as ``patchctl apply`` would; every patch
must end ``applied`` and every captured file must come out as the fork has it. When that fails,
the patches at fault are named with the real cause (the outcome and reason the engine gave, or
the first line where the text differs), so capture leaves out their edits only and keeps the
rest of the file (issue 15: one superseded keyword-rename used to take its whole file along,
with a reason that was not the cause).

:func:`prove` is capture's third step: it proves the staged patchset, and when a patch is
blamed, leaves it out, stages the rest and proves again.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

from patchctl.capture import basetexts
from patchctl.capture.model import Draft, LeftOut, expected
from patchctl.capture.sources import Tree
from patchctl.capture.stage import Staged, stage
from patchctl.errors import ManifestError, PatchctlError
from patchctl.patchsets.engine import Plan, plan_apply
from patchctl.patchsets.loader import load_patchset
from patchctl.patchsets.model import Outcome, Patchset
from patchctl.patchsets.placement.pyparse import split_lines
from patchctl.target import Target


@dataclass(frozen=True)
class Proven:
    """What survived the proof on BASE, and the patches it left out."""

    #: the staged patchset, every patch of it proven (``where`` None: none was left)
    staged: Staged
    left_out: tuple[LeftOut, ...]


def prove(staged: Staged, base: Tree) -> Proven:
    """Prove ``staged`` on BASE. A patch the proof blames is left out with the cause, the other
    edits of its file kept; what remains is staged and proven again (each round leaves out at
    least one patch, so this ends). With no patch left nothing is staged."""
    target = Target(base.root, base.version, base.label, None, False)
    left: list[LeftOut] = []
    while staged.where is not None:
        # the base texts are proven with the patches: a merge-only text hunk is placed by them
        # on BASE too (the 3-way fallback, as apply on any other tree places it)
        basetexts.keep(staged.where, staged.drafts, base)
        alone = {d.id: (d.path, d.alone()) for d in staged.drafts}
        try:
            loaded = load_patchset(staged.where)
        except ManifestError as exc:  # a draft the loader refuses: leave it out, never abort on it
            if exc.patch is None or exc.patch not in alone:
                raise PatchctlError(
                    f"capture drafted a manifest its loader refuses ({exc.key}: {exc.problem}); "
                    "nothing was written; report this as a capture bug"
                ) from None
            found = [Blame(exc.patch, alone[exc.patch][0], f"the patch's {exc.key} {exc.problem}")]
        else:
            found = blame(loaded, target, expected(staged.drafts), alone)
        if not found:
            break
        blamed = {b.patch: b for b in found}
        shutil.rmtree(staged.where)
        left += [
            LeftOut(
                d.path,
                d.line or 1,
                f"patch {d.id} ({d.kind}) does not reproduce its edit from BASE: "
                f"{blamed[d.id].cause}; this edit is left out, the file's other captured edits are kept",
            )
            for d in staged.drafts
            if d.id in blamed
        ]
        staged = stage([d for d in staged.drafts if d.id not in blamed], staged.header, staged.where)
    return Proven(staged, tuple(left))


def outside(fork: Tree, base: Tree, drafts: tuple[Draft, ...]) -> tuple[str, ...]:
    """Every file FORK changed against BASE that the proven patchset does not re-create.

    Measured, not inferred from what capture chose: a file counts as re-created only when the
    proven drafts make of BASE's file exactly FORK's bytes (or no file where FORK has none).
    "Byte-identical" may be said only when this is empty.
    """
    made = expected(drafts)

    def read(tree: Tree, rel: str) -> str | None:
        path = tree.root / rel
        return path.read_bytes().decode("utf-8", "surrogateescape") if path.is_file() else None

    out = []
    for rel in sorted(fork.files | base.files | set(made)):
        want, had = read(fork, rel), read(base, rel)
        if want != had and made.get(rel, had) != want:
            out.append(rel)
    return tuple(out)


@dataclass(frozen=True)
class Blame:
    #: the patch's id
    patch: str
    #: the file it edits
    path: str
    #: what went wrong, in words that name the cause
    cause: str


def blame(
    patchset: Patchset, target: Target, expected: dict[str, str | None], alone: dict[str, tuple[str, str | None]]
) -> list[Blame]:
    """The patches that keep ``patchset`` from reproducing ``expected`` on BASE; [] when it does.

    ``expected`` maps each captured file to the fork's text (less edits not captured);
    ``alone`` maps each patch id to its file and the text that patch alone makes of BASE's.
    """
    plan = plan_apply(target, [patchset])
    out = [
        Blame(r.patch, alone[r.patch][0], f"applied to BASE it ends {r.status.value}: {r.reason}")
        for r in plan.results
        if r.status is not Outcome.APPLIED and r.patch in alone
    ]
    explained = {b.path for b in out}
    for rel, want in sorted(expected.items()):
        if rel not in explained and _after(plan, target, rel) != want:
            out += _isolate(patchset, target, rel, want, alone)
    return out


def _after(plan: Plan, target: Target, rel: str) -> str | None:
    if rel in plan.after:
        return plan.after[rel]
    path = target.root / rel
    return path.read_bytes().decode("utf-8", "surrogateescape") if path.is_file() else None


def _isolate(
    patchset: Patchset, target: Target, rel: str, want: str | None, alone: dict[str, tuple[str, str | None]]
) -> list[Blame]:
    """Each patch of ``rel`` applied to BASE on its own: those that miss their own edit are to blame;
    if none does, they clash with each other and all of them are."""
    ids = [pid for pid, (path, _) in alone.items() if path == rel]
    out = []
    for pid in ids:
        got = _after(plan_apply(target, [patchset], only={pid}), target, rel)
        if got != alone[pid][1]:
            out.append(Blame(pid, rel, f"applied alone to BASE it writes {difference(got, alone[pid][1])}"))
    if out or not ids:
        return out
    together = _after(plan_apply(target, [patchset], only=set(ids)), target, rel)
    return [
        Blame(
            pid,
            rel,
            f"each of {', '.join(ids)} reproduces its own edit, but together they write {difference(together, want)}",
        )
        for pid in ids
    ]


def difference(got: str | None, want: str | None) -> str:
    """Where ``got`` first departs from the fork's text, as a user would look it up."""
    if got is None:
        return "no file where the fork has one"
    if want is None:
        return "a file where the fork has none"
    a, b = split_lines(got), split_lines(want)
    n = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    mine = a[n].rstrip("\r\n") if n < len(a) else "(end of file)"
    fork = b[n].rstrip("\r\n") if n < len(b) else "(end of file)"
    return f"line {n + 1} as {mine.strip()!r} where the fork has {fork.strip()!r}"
