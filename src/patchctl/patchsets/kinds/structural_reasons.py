"""What the ``structural`` kind says about a patch's place: where it is, which places fit, why none does.

:mod:`~patchctl.patchsets.kinds.structural` decides; these word its answers. They name a place
by its scope, blocks and nearest anchor (never by a line number alone, which moves with every
release), list every fitting place where there are several, and for a conflict name the one
anchor or statement that differs (:mod:`~patchctl.patchsets.placement.explain`) with a diff beside.
"""

from __future__ import annotations

import difflib

from patchctl.patchsets.placement import explain
from patchctl.patchsets.kinds.base import Edit, EditStatus
from patchctl.patchsets.placement import gaptext, places
from patchctl.patchsets.placement.places import Params
from patchctl.patchsets.placement.pyparse import parse_ast, split_lines


def where(p: Params) -> str:
    """The patch's place in words: its scope, blocks and nearest anchor (or the header)."""
    scope = (p.scope or "the module") + "".join(f" > `{b}`" for b in p.blocks)
    if p.mode == "header":
        return f"the header of {scope}"
    near = f" after `{p.above[-1]}`" if p.above else (f" before `{p.below[0]}`" if p.below else "")
    return f"{scope}{near}"


def spans(sites: list[places.Site]) -> str:
    """The lines of each place: ``12-15, 40``."""
    return ", ".join(f"{s.first}-{s.last}" if s.last > s.first else str(s.first) for s in sites)


def ambiguous(p: Params, fits: list[places.Site], when: str = "") -> str:
    """Why nothing is guessed: every fitting place, with which side of the patch it holds."""
    listed = ", ".join(f"{spans([s])} ({'patched' if s.match.startswith('after') else 'unpatched'})" for s in fits)
    return (
        f"{where(p)}{when} fits {len(fits)} places, lines {listed}; its anchors repeat, so "
        "nothing is guessed: add params.occurrence or more anchors"
    )


def diff(expected: str, site: places.Site, p: Params, path: str) -> str:
    """A unified diff from the patch's text (at the place's indentation) to the place's."""
    want = gaptext.reindent(expected, p.indent, site.indent) or expected
    return "".join(
        difflib.unified_diff(
            want.splitlines(keepends=True), site.text.splitlines(keepends=True), "patch", f"{path}:{site.first}"
        )
    )


def no_fit(text: str, found: places.Found, p: Params, path: str) -> Edit:
    """Why no place holds the patch's original text: the anchor missing, or the first
    statement whose code differs (by syntax: never a quote or a number's spelling)."""
    if not found.exists:
        return Edit(EditStatus.NOT_APPLICABLE, f"{path} has no {p.scope or 'module'} scope")
    if not found.near:
        why = explain.anchors(
            split_lines(text), parse_ast(text, path), p.scope, list(p.above), list(p.below), list(p.blocks)
        )
        return Edit(EditStatus.CONFLICT, f"{where(p)}: {why}")
    near = found.near[0]
    before = gaptext.reindent(p.before, p.indent, near.indent) or p.before
    why = explain.difference(before, near.text, near.first) if p.mode == "statements" else "its header differs"
    return Edit(
        EditStatus.CONFLICT,
        f"{where(p)}: {lines_hold(found.near)} other code than the patch expects: {why}",
        detail=diff(p.before, near, p, path),
    )


def lines_hold(sites: list[places.Site]) -> str:
    """``line 22 holds`` or ``lines 22-25 hold``: the verb agrees with what :func:`spans` lists."""
    one = len(sites) == 1 and sites[0].last <= sites[0].first
    return f"line {spans(sites)} holds" if one else f"lines {spans(sites)} hold"
