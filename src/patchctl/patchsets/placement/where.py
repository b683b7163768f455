"""Where a structural edit goes in one file, and why: :func:`locate`, the one entry point.

Every command that places a structural patch asks this: ``check`` and ``apply`` of the kind
(so ``apply``, ``verify``, ``revert``, ``matrix``, ``drift`` and the ``--repo`` history walk,
which plan through them), the check after a change that it can be found again, and the markers
of a conflict. Before, each asked :mod:`.places`, :mod:`.anchors` and :mod:`.candidate` on its
own, parsing the file again each time; now the file is parsed once per text
(:func:`~.anchors.parsed`), and one edit in one text is looked up once (:func:`locate` is
memoised), whoever asks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from patchctl.patchsets.placement import anchors as st
from patchctl.patchsets.placement import candidate as cand
from patchctl.patchsets.placement import explain, places
from patchctl.patchsets.placement.places import Params, Site


@dataclass(frozen=True)
class Placement:
    """Where edit ``edit`` goes in ``text`` (the file at ``path``), and why."""

    edit: Params
    text: str = field(repr=False)
    path: str
    #: every place holding the edit's original or its change, exactly or as the same code: one
    #: is where it goes (:attr:`where`); several are ambiguous, and nothing is guessed
    fits: list[Site]
    #: the nearest place after each match of the anchors above, whatever it holds (for messages
    #: and markers)
    near: list[Site]
    #: whether the edit's scope (its class or function, or the module) is in the file at all
    exists: bool

    @property
    def where(self) -> Site | None:
        """The one fitting place (its lines, indentation and text); None when none or several fit."""
        return self.fits[0] if len(self.fits) == 1 else None

    @property
    def how(self) -> str:
        """How it is placed: ``before`` or ``after`` (the place holds the edit's original, or its
        change, exactly), ``before-code`` or ``after-code`` (the same code, spelt or formatted
        otherwise), ``ambiguous`` (several places fit: :attr:`fits`), or ``none`` (:attr:`why`)."""
        if len(self.fits) > 1:
            return "ambiguous"
        return self.fits[0].match if self.fits else "none"

    @property
    def file(self) -> st.Parsed:
        """The file's tree and lines (parsed once per text)."""
        return st.parsed(self.text, self.path)

    def tagged_other(self, tag: str) -> list[Site]:
        """Places holding tagged text unlike either side, away from every fitting place."""
        return [
            s
            for s in self.near
            if s.match == "other" and f"# {tag}" in s.text and all(s.first != f.first for f in self.fits)
        ]

    @cached_property
    def why(self) -> str:
        """Why no place fits, in a clause a user can act on: the scope missing, the one anchor or
        block no statement reads (by syntax), or the first statement whose code differs where
        the anchors lead; or every fitting place, when several do. Empty when one place fits."""
        p = self.edit
        if len(self.fits) > 1:
            listed = ", ".join(
                f"{spans([s])} ({'patched' if s.match.startswith('after') else 'unpatched'})" for s in self.fits
            )
            return f"fits {len(self.fits)} places, lines {listed}"
        if self.fits:
            return ""
        if not self.exists:
            return f"{self.path} has no {p.scope or 'module'} scope"
        if not self.near:
            file = self.file
            return explain.anchors(file.lines, file.tree, p.scope, list(p.above), list(p.below), list(p.blocks))
        near = self.near[0]  # (difference dedents both texts: the original needs no re-indenting)
        why = explain.difference(p.before, near.text, near.first) if p.mode == "statements" else "its header differs"
        return f"{lines_hold(self.near)} other code than the patch expects: {why}"

    @cached_property
    def candidate(self) -> cand.Candidate | str:
        """The best place for conflict markers when the edit conflicts (``apply
        --conflicts=markers``), or why none is offered (:mod:`.candidate`)."""
        return cand.best(self.near, self.file, self.edit)


@lru_cache(maxsize=16)
def locate(edit: Params, text: str, path: str) -> Placement:
    """Where ``edit`` (a structural patch's parameters) goes in ``text``, the file at ``path``, and why.

    The answer is :class:`Placement`: the places that fit (:attr:`~Placement.where` when exactly
    one does), how (:attr:`~Placement.how`), why not (:attr:`~Placement.why`) and, for a conflict,
    where markers go (:attr:`~Placement.candidate`). The same edit in the same text is looked up
    once, whoever asks (a patch's check, then its apply; its markers); the text is parsed once
    for every edit of it. A text that is not Python raises
    :class:`~patchctl.errors.SourceSyntaxError` naming ``path``.
    """
    found = places.find(text, edit, path)
    return Placement(edit, text, path, found.fits, found.near, found.exists)


def spans(sites: list[Site]) -> str:
    """The lines of each place: ``12-15, 40``."""
    return ", ".join(f"{s.first}-{s.last}" if s.last > s.first else str(s.first) for s in sites)


def lines_hold(sites: list[Site]) -> str:
    """``line 22 holds`` or ``lines 22-25 hold``: the verb agrees with what :func:`spans` lists."""
    one = len(sites) == 1 and sites[0].last <= sites[0].first
    return f"line {spans(sites)} holds" if one else f"lines {spans(sites)} hold"
