"""Where a structural patch's texts sit in a file: every place its anchors lead to, what each
holds, and which of them count.

:func:`find` walks the windows :mod:`patchctl.patchsets.placement.anchors`
gives for the patch's scope and anchors, reads what each holds (:class:`Site`: the patch's
``after`` or ``before`` text exactly, the same code with other spacing or comments, or other
code) and ranks them: exact places outrank those holding only the same code, and both sides
count together, so a file holding the original at one place and the change at another is
ambiguous rather than a guess (issue 10). :func:`~patchctl.patchsets.placement.locate` gives
the :class:`Found` as its answer, and the ``structural`` kind decides what to do with it.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

from patchctl.patchsets.placement import anchors as st
from patchctl.patchsets.placement import gaptext


@dataclass(frozen=True)
class Params:
    """A structural patch's parameters (the ``structural`` kind parses them; here they are searched for)."""

    mode: str
    scope: str
    above: tuple[str, ...]
    below: tuple[str, ...]
    indent: str
    before: str
    after: str
    #: 1-based pick among several places that fit the anchors (set only when a user chose one)
    occurrence: int | None = None
    #: headers of the compound statements inside ``scope`` whose body holds the change, outermost first
    blocks: tuple[str, ...] = ()


@dataclass(frozen=True)
class Site:
    """One place in the file (lines ``first`` to ``last``) and which side of the patch it holds."""

    first: int
    last: int
    indent: str
    #: the tree's text there
    text: str
    #: after | before | after-code | before-code | other
    match: str


def _header_code(text: str) -> str:
    """A header made parseable: dedented, with an empty body."""
    return textwrap.dedent(text).rstrip() + "\n    pass\n"


def _classify(found: str, indent: str, p: Params) -> str:
    """Which side of the patch ``found`` holds, as :attr:`Site.match` names it."""
    after = gaptext.reindent(p.after, p.indent, indent)
    before = gaptext.reindent(p.before, p.indent, indent)
    if found == after:
        return "after"
    if found == before:
        return "before"
    norm = _header_code if p.mode == "header" else (lambda t: t)
    changes_code = not st.same_code(norm(p.after), norm(p.before))
    if changes_code and st.same_code(norm(found), norm(p.after)):
        return "after-code"
    if changes_code and st.same_code(norm(found), norm(p.before)):
        return "before-code"
    if not changes_code and st.same_code(norm(found), norm(p.after)):
        # the fork's edit is itself a reformat (a trailing comma, a re-wrap): upstream's code is
        # the same, however it is spelled now, so there is nothing left to carry (issue 38.3)
        return "after-code"
    return "other"


def _best(sites: list[Site]) -> list[Site]:
    """The places holding either side's text exactly, else those holding either side's code.

    Both sides count together: a file holding the original at one place and the change at
    another cannot be said to be patched or not, so it is ambiguous, never a guess (issue 10).
    An exact place outranks one that only does the same: inserting a copy of the statement
    below leaves the original reading like the change with its comments stripped.
    """
    exact = [s for s in sites if s.match in ("before", "after")]
    return exact or [s for s in sites if s.match in ("before-code", "after-code")]


def _sizes(p: Params) -> set[int] | None:
    """How many statements a place must hold to fit either side; None where a text does not parse."""
    counts = [gaptext.count_statements(p.before), gaptext.count_statements(p.after)]
    return None if None in counts else {c for c in counts if c is not None}


@dataclass(frozen=True)
class Found:
    """What a file holds where a patch's anchors point."""

    #: the places holding the patch's before or after text (exactly, or as the same code)
    fits: list[Site]
    #: the nearest place after each match of the anchors above, whatever it holds (for messages)
    near: list[Site]
    #: whether the scope exists at all
    exists: bool


def find(text: str, p: Params, path: str) -> Found:
    """Every place in ``text`` that holds the patch's before or after text (the file parsed once
    for every patch that asks: :func:`~.anchors.parsed`)."""
    file = st.parsed(text, path)
    tree, lines, memo = file.tree, file.lines, file.keys
    if p.mode == "header":
        nodes = [n for n in st.find_scopes(tree, p.scope) if not isinstance(n, ast.Module)]
        if p.occurrence is not None:
            nodes = nodes[p.occurrence - 1 : p.occurrence]
        near = [_site(lines, *_header(lines, n, p), p) for n in nodes]
        return Found(_best(near), near, bool(nodes))
    exists = bool(st.find_scopes(tree, p.scope))
    found = Found([], [], exists)
    sizes = _sizes(p)
    for exact in (True, False):  # anchors as text first; by syntax where text finds no fit
        nearest = st.candidates(lines, tree, p.scope, list(p.above), list(p.below), exact, list(p.blocks), memo)
        if p.occurrence is not None:
            nearest = nearest[p.occurrence - 1 : p.occurrence]
        every = [w for n in nearest for w in st.spread(lines, n, list(p.below), sizes, memo)]
        near = [_site(lines, w.first, w.last, w.indent, p) for w in nearest]
        found = Found(_best([_site(lines, w.first, w.last, w.indent, p) for w in every]), near, exists)
        if found.fits:
            break
    return found


def _header(lines: list[str], node: ast.AST, p: Params) -> tuple[int, int, str]:
    """(first, last, indent) of a definition's header; decorators belong to it only when the
    patch changes them."""
    decorated = any(t.lstrip().startswith("@") for t in (p.before, p.after))
    first = st.header_span(lines, node)[0] if decorated else node.lineno  # type: ignore[arg-type, attr-defined] # node is a def or class: it has a header and line numbers
    line = lines[node.lineno - 1]  # type: ignore[attr-defined] # as above
    return first, st.header_end(lines, node), line[: len(line) - len(line.lstrip())]  # type: ignore[arg-type] # as above


def _site(lines: list[str], first: int, last: int, indent: str, p: Params) -> Site:
    """Lines ``first`` to ``last`` as a :class:`Site`, classified against the patch."""
    body = "".join(lines[first - 1 : last])
    return Site(first, last, indent, body, _classify(body, indent, p))
