"""Plan, then write: ``apply`` and ``revert`` of patchsets on a target tree, as one call each.

The steps live in their own modules — :mod:`~patchctl.patchsets.reader` (where a patch stands),
:mod:`~patchctl.patchsets.plan` and :mod:`~patchctl.patchsets.revert` (pure planning),
:mod:`~patchctl.patchsets.write` (all-or-nothing, crash-safe writing, ``--commit``) — and
:func:`apply` / :func:`revert` compose them into one frozen :class:`RunResult` that the CLI
only renders. ``matrix`` and ``capture`` use the planning steps directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from patchctl.patchsets import conflicts
from patchctl.patchsets.model import Outcome, PatchResult, Patchset
from patchctl.patchsets.plan import Plan, plan_apply
from patchctl.patchsets.reader import Assessment, TreeReader, assess, locate
from patchctl.patchsets.revert import plan_revert
from patchctl.patchsets.write import Written, check_can_commit, execute
from patchctl.target import Target

__all__ = [
    "Assessment",
    "PatchResult",
    "Plan",
    "RunResult",
    "TreeReader",
    "Written",
    "apply",
    "assess",
    "check_can_commit",
    "execute",
    "locate",
    "plan_apply",
    "plan_revert",
    "revert",
]


@dataclass(frozen=True)
class RunResult:
    """What an apply or revert did (or, with ``dry_run``, would do) to one tree."""

    command: str
    target: Target
    patchsets: tuple[str, ...]
    results: tuple[PatchResult, ...]
    dry_run: bool
    #: the unified diff of every change (computed for dry runs)
    diff: str = ""
    #: files written (the record included); empty when nothing was written
    written: tuple[str, ...] = ()
    commit: str | None = None
    branch: str | None = None

    @property
    def ok(self) -> bool:
        return not any(r.status.is_failure for r in self.results if isinstance(r.status, Outcome))

    def to_json(self) -> dict[str, Any]:
        return {
            "target": str(self.target.root),
            "version": self.target.version,
            "dry_run": self.dry_run,
            "results": [r.to_json() for r in self.results],
            "written": list(self.written),
            "commit": self.commit,
        }


def default_branch(patchsets: list[Patchset]) -> str:
    return "patchctl/" + "+".join(ps.name for ps in patchsets)


def apply(
    target: Target,
    patchsets: list[Patchset],
    *,
    only: set[str] | None = None,
    dry_run: bool = False,
    force: bool = False,
    commit: bool = False,
    branch: str | None = None,
    markers: bool = False,
    planner: Callable[[Target, list[Patchset], set[str] | None], Plan] = plan_apply,
) -> RunResult:
    """Plan every patch, then write the plan all-or-nothing; with ``commit`` on a new branch
    (``patchctl/<patchsets>`` unless named) in one commit listing the applied patch ids. With
    ``markers`` a conflicting patch is written at its best candidate place with conflict markers
    (:mod:`~patchctl.patchsets.conflicts`) instead of refusing the change, and one with no such
    place is left unwritten without refusing the others. ``planner`` is :func:`plan_apply` or one
    that wraps it (``--repo``: :meth:`~patchctl.patchsets.history.carry.History.plan`)."""
    conflicts.refuse_pending(target.root)
    plan = planner(target, patchsets, only)
    if markers:
        conflicts.mark(plan, patchsets)
    written = Written([])
    # with markers, a conflict that got none is left as it is and the rest written: patches that
    # need it are held back already, so what is written holds together
    if not dry_run and (plan.ok or markers):
        ids = [r.patch for r in plan.results if r.status is Outcome.APPLIED]
        message = f"patchctl: apply {', '.join(ps.name for ps in patchsets)}\n\nPatches: {', '.join(ids)}\n"
        written = execute(
            plan,
            force=force,
            message=message,
            commit_branch=(branch or default_branch(patchsets)) if commit and ids else None,
            leave_conflicts=markers,
        )
    return _result("apply", plan, patchsets, dry_run, written, hold=not markers)


def revert(
    target: Target, patchsets: list[Patchset], *, only: set[str] | None = None, dry_run: bool = False
) -> RunResult:
    """Undo what was applied. Revert rewrites only files whose patch it found intact, so local
    edits elsewhere in those files are never at stake: uncommitted changes do not stop it."""
    plan = plan_revert(target, patchsets, only)
    written = execute(plan, force=True, command="revert") if not dry_run and plan.ok else Written([])
    return _result("revert", plan, patchsets, dry_run, written)


def _result(
    command: str, plan: Plan, patchsets: list[Patchset], dry_run: bool, written: Written, *, hold: bool = True
) -> RunResult:
    if hold:
        plan.hold_back()
    return RunResult(
        command,
        plan.target,
        tuple(ps.name for ps in patchsets),
        tuple(plan.results),
        dry_run,
        plan.diff() if dry_run else "",
        tuple(written.paths),
        written.commit,
        written.branch,
    )
