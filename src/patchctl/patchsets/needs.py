"""Related patches stay together: a patch whose ``needs`` did not apply is held back (issue 27).

A call site without its callee, or a use of a name without its import, is broken code that
reads as ``applied``. The manifest's ``needs`` names those partners; this module brings them in
for ``apply --only`` (:func:`closure`), takes the users along for ``revert --only``
(:func:`users`), and finds the patches whose partners did not apply (:func:`unmet`) and those
whose users did not (:func:`orphaned`), so that :func:`~patchctl.patchsets.plan.plan_apply` can
hold back the first and warn about the second.
"""

from __future__ import annotations

from collections.abc import Iterable

from patchctl.patchsets.model import Outcome, PatchResult, Patchset

#: outcomes after which a patch's change is in the tree (or upstream's own is)
IN_TREE = (Outcome.APPLIED, Outcome.ALREADY_APPLIED, Outcome.SUPERSEDED_UPSTREAM)

Key = tuple[str, str]


def closure(patchsets: Iterable[Patchset], only: set[str]) -> set[str]:
    """``only`` with every patch it needs, transitively: ``--only call-site`` brings its callee."""
    needs = {p.id: p.needs for ps in patchsets for p in ps.patches}
    out, todo = set(only), list(only)
    while todo:
        for dep in needs.get(todo.pop(), ()):
            if dep not in out:
                out.add(dep)
                todo.append(dep)
    return out


def users(patchsets: Iterable[Patchset], only: set[str]) -> set[str]:
    """``only`` with every patch that needs one of them, transitively: ``revert --only callee``
    takes its call sites along, or they would be left calling nothing."""
    out = set(only)
    grew = True
    while grew:
        more = {p.id for ps in patchsets for p in ps.patches if p.id not in out and out & set(p.needs)}
        out |= more
        grew = bool(more)
    return out


def _why(r: PatchResult, ps: Patchset) -> str:
    """The partner by id and file (which may not be the patch's own, issue 27), with its outcome;
    a partner that looked at no file (not applicable here) by the first file it targets."""
    partner = ps.get(r.patch)
    path = r.path or (partner.target[0] if partner is not None and partner.target else None)
    where = f" in {path}" if path else ""
    return f"{r.patch}{where} ({r.status.value}{': ' + r.reason if r.reason else ''})"


def unmet(patchsets: Iterable[Patchset], results: Iterable[PatchResult]) -> dict[Key, str]:
    """Patches that would change the tree although a patch they need did not apply, each with a
    reason naming that partner. A partner left out of the run (``only``) is not asked about."""
    by_key = {(r.patchset, r.patch): r for r in results}
    out: dict[Key, str] = {}
    for ps in patchsets:
        for p in ps.patches:
            mine = by_key.get((ps.name, p.id))
            if mine is None or mine.status is not Outcome.APPLIED:
                continue
            missing = [
                by_key[(ps.name, d)]
                for d in p.needs
                if (ps.name, d) in by_key and by_key[(ps.name, d)].status not in IN_TREE
            ]
            if missing:
                out[(ps.name, p.id)] = (
                    "held back: it needs "
                    + "; ".join(_why(r, ps) for r in missing)
                    + ", which did not apply; nothing of it was written"
                )
    return out


def orphaned(patchsets: Iterable[Patchset], results: Iterable[PatchResult]) -> dict[Key, str]:
    """Applied patches some of whose users did not apply (a method whose only call site
    conflicts): they stay applied, with a warning naming the partner."""
    by_key = {(r.patchset, r.patch): r for r in results}
    out: dict[Key, list[str]] = {}
    for ps in patchsets:
        for p in ps.patches:
            user = by_key.get((ps.name, p.id))
            if user is None or user.status in IN_TREE:
                continue
            for d in p.needs:
                dep = by_key.get((ps.name, d))
                if dep is not None and dep.status is Outcome.APPLIED:
                    out.setdefault((ps.name, d), []).append(_why(user, ps))
    return {
        k: "warning: needed by " + "; ".join(v) + ", which did not apply, so this code may be unused"
        for k, v in out.items()
    }
