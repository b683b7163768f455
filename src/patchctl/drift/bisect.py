"""The first upstream commit where one patch's outcome changes, found in O(log n) probes.

As ``git bisect`` does: the history searched is ``bad``'s first-parent line after ``good``; when
``good`` is not an ancestor of ``bad`` (verl cuts releases on their own branches: v0.6.1 is not
an ancestor of v0.7.0) the search starts at their merge base, provided the merge base still
has ``good``'s outcome. A commit where the patch's files do not parse, or where its file is
missing while both ends have it, is skipped (``git bisect skip``) and the nearest other commit
is probed instead; when only skipped commits remain between the last good and the first bad
one, all of them are named.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchctl.drift import history
from patchctl.drift.errors import (
    ChangedBeforeBranch,
    NoCommonHistory,
    Reversed,
    SameOutcome,
    Unjudgeable,
)
from patchctl.drift.probe import Probe, probe
from patchctl.patchsets.model import Patch, Patchset


@dataclass(frozen=True)
class Bisection:
    """Where one patch's outcome changes between two refs."""

    patch: str
    good: str
    bad: str
    #: the merge base searched from, when ``good`` is not an ancestor of ``bad``
    base: str | None
    #: the outcome at the last commit that still has ``good``'s outcome (its reason included)
    before: Probe
    #: the outcome at the first commit that differs
    after: Probe
    #: that first commit; None when skipped commits leave several candidates
    first: history.Commit | None
    #: when skips leave several candidates: all of them, oldest first (``first`` is None)
    candidates: tuple[history.Commit, ...]
    skipped: tuple[Probe, ...]
    #: commits on the first-parent line searched, and how many of them were probed
    span: int
    probes: int
    #: every commit probed, in the order probed (both ends first)
    probed: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "patch": self.patch,
            "good": self.good,
            "bad": self.bad,
            "merge_base": self.base,
            "first": self.first.to_json() if self.first else None,
            "candidates": [c.to_json() for c in self.candidates],
            "before": self.before.to_json(),
            "after": self.after.to_json(),
            "skipped": [p.to_json() for p in self.skipped],
            "span": self.span,
            "probes": self.probes,
            "probed": list(self.probed),
        }


class _Search:
    """The probes of one bisection, each commit probed at most once."""

    def __init__(self, repo: Path, patchset: Patchset, patch: Patch, scratch: Path) -> None:
        self.repo, self.patchset, self.patch, self.scratch = repo, patchset, patch, scratch
        self.seen: dict[str, Probe] = {}

    def at(self, sha: str) -> Probe:
        if sha not in self.seen:
            self.seen[sha] = probe(self.repo, sha, self.patchset, self.patch, self.scratch)
        return self.seen[sha]


def bisect(repo: Path, patchset: Patchset, patch: Patch, good: tuple[str, str], bad: tuple[str, str]) -> Bisection:
    """``good`` and ``bad`` are (as typed, commit): the commit resolved, the text for messages."""
    (good_text, good_sha), (bad_text, bad_sha) = good, bad
    with tempfile.TemporaryDirectory(prefix="patchctl-bisect-") as tmp:
        search = _Search(repo, patchset, patch, Path(tmp))
        g, b = search.at(good_sha), search.at(bad_sha)
        for option, text, p in (("--good", good_text, g), ("--bad", bad_text, b)):
            if p.skipped:
                raise Unjudgeable(option, text, patch.id, p.skipped)
        if g.status is b.status:
            raise SameOutcome(patch.id, good_text, bad_text, b.status.value if b.status else "?")
        start, base = _start(repo, search, patch, good_text, good_sha, bad_sha, g)
        chain = history.first_parent_chain(repo, start, bad_sha)
        lo, hi, skipped = _narrow(search, chain, g, b)
        before = search.at(chain[lo]) if lo >= 0 else search.at(start)
        after = search.at(chain[hi])
        between = [history.info(repo, sha) for sha in chain[lo + 1 : hi + 1]]
        return Bisection(
            patch.id,
            good_sha,
            bad_sha,
            base,
            before,
            after,
            between[0] if len(between) == 1 else None,
            tuple(between) if len(between) > 1 else (),
            tuple(skipped),
            len(chain),
            len(search.seen),
            tuple(search.seen),
        )


def _start(
    repo: Path, search: _Search, patch: Patch, good_text: str, good_sha: str, bad_sha: str, g: Probe
) -> tuple[str, str | None]:
    """Where the search starts: ``good`` itself, or the merge base when ``good`` is on another branch."""
    if history.is_ancestor(repo, good_sha, bad_sha):
        return good_sha, None
    if history.is_ancestor(repo, bad_sha, good_sha):
        raise Reversed(good_text, bad_sha[:12])
    base = history.merge_base(repo, good_sha, bad_sha)
    if base is None:
        raise NoCommonHistory(good_text, bad_sha[:12])
    at_base = search.at(base)
    if at_base.status is not g.status or at_base.skipped:
        raise ChangedBeforeBranch(
            patch.id, good_text, base, at_base.status.value if at_base.status else f"unjudgeable ({at_base.skipped})"
        )
    return base, base


def _narrow(search: _Search, chain: list[str], g: Probe, b: Probe) -> tuple[int, int, list[Probe]]:
    """Binary search: index ``lo`` (-1: the start) has good's outcome, ``hi`` does not."""
    lo, hi = -1, len(chain) - 1
    skipped: list[Probe] = []
    skip: set[int] = set()
    while hi - lo > 1:
        mid = (lo + hi) // 2
        pick = min((i for i in range(lo + 1, hi) if i not in skip), key=lambda i: (abs(i - mid), i), default=None)
        if pick is None:
            break
        p = search.at(chain[pick])
        if p.skipped or (p.file_missing and not g.file_missing and not b.file_missing):
            skipped.append(p if p.skipped else Probe(p.sha, None, None, "", p.reason))
            skip.add(pick)
        elif p.status is g.status:
            lo = pick
        else:
            hi = pick
    return lo, hi, skipped
