"""Minimal anchors: an edit inside a loop or branch is anchored in that block, not by the whole
block (issue 27, requirement 2).

:func:`patchctl.capture.pyunits.find_unit` stops at the innermost class or function, so a
one-line insertion in a 115-line ``for`` loop of ``fit`` used to carry the whole loop as its
text: any upstream change anywhere in the loop made it conflict. Here the unit is narrowed,
block by block, into the body of the compound statement (``for``, ``while``, ``if``, ``with``,
``try``) that holds all of its hunks; each step is named by that statement's header
(``params.blocks``), compared by syntax like every anchor. The innermost narrowing that BASE
places without guessing wins; where none does, the unit stays as wide as it was.

Each hunk is narrowed on its own before hunks are joined (:func:`split`, issue 38 requirement 2):
joined first, at the level of the function, an insertion above a loop and an edit inside it
became one patch holding the whole loop (Skywork-OR1's ``update_policy``: 71 lines of anchor
for a one-line insertion and a few edits 30 lines apart). Narrowed first, they are separate
patches that travel alone, and only units that share statements of one body are joined.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable
from dataclasses import replace

from patchctl.capture.pyunits import Problem, Unit, around, merge, place
from patchctl.patchsets.placement import anchors as st

_BLOCKS = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try)


def _holds(body: list[ast.stmt], lo: int, hi: int) -> bool:
    """Whether fork lines ``lo..hi`` (``hi < lo``: a deletion before ``lo``) are inside ``body``."""
    first, last = st.first_line(body[0]), body[-1].end_lineno or body[-1].lineno
    return first <= lo and hi <= last if hi >= lo else first < lo <= last


def narrower(unit: Unit, fork_lines: list[str]) -> list[Unit]:
    """The units nested ever deeper inside ``unit``, outermost first ([] when it is one already)."""
    out: list[Unit] = []
    cur = unit
    while cur.mode == "statements" and cur.below - cur.above == 2:
        stmt = cur.node.body[cur.above + 1]  # type: ignore[attr-defined] # a cursor's node is a def, class or block, which has a body
        spans = [(h.fork[0] + 1, h.fork[1]) for h in cur.hunks]
        if not isinstance(stmt, _BLOCKS) or not all(_holds(stmt.body, lo, hi) for lo, hi in spans):
            break
        edges = [around(stmt.body, lo, hi) for lo, hi in spans]
        cur = Unit(
            "statements",
            cur.scope,
            stmt,
            min(a for a, _ in edges),
            max(b for _, b in edges),
            list(cur.hunks),
            blocks=[*cur.blocks, st.head(fork_lines, stmt)],
            outer=cur,
        )
        out.append(cur)
    return out


def place_narrowest(
    unit: Unit, fork_lines: list[str], base_tree: ast.Module, base_lines: list[str], touched: set[int], force: bool
) -> Problem | None:
    """Place the narrowest unit inside ``unit`` that BASE holds at one place; else ``unit`` itself.

    ``unit`` is filled in as :func:`~patchctl.capture.pyunits.place` would, from whichever won.
    """
    for inner in reversed(narrower(unit, fork_lines)):
        trial = replace(inner, params={}, hunks=list(inner.hunks))
        if place(trial, fork_lines, base_tree, base_lines, set(), force) is None:
            unit.params, unit.base_span, unit.fork_span = trial.params, trial.base_span, trial.fork_span
            unit.node, unit.above, unit.below, unit.blocks = trial.node, trial.above, trial.below, trial.blocks
            return None
    return place(unit, fork_lines, base_tree, base_lines, touched, force)


def split(units: list[Unit], fork_lines: list[str]) -> list[Unit]:
    """Each hunk's unit narrowed as deep as its own lines allow, then joined where units share
    statements of one body (:func:`~patchctl.capture.pyunits.merge`): the smallest patches that
    can travel alone."""
    return merge([(narrower(u, fork_lines) or [u])[-1] for u in units], fork_lines)


def _wider(unit: Unit) -> Unit:
    """``unit`` one body further out: the block statement that holds it, with all its hunks."""
    assert unit.outer is not None
    return replace(unit.outer, hunks=list(unit.hunks), params={})


def settle(
    units: list[Unit],
    fork_lines: list[str],
    base_tree: ast.Module,
    base_lines: list[str],
    forced: Callable[[Unit], bool],
) -> list[tuple[Unit, Problem | None]]:
    """Place every unit of :func:`split` in BASE, each filled in as
    :func:`~patchctl.capture.pyunits.place` does; a narrowed unit BASE cannot place is widened a
    body at a time (and joined again with what it then overlaps), as far as its scope's body,
    whose Problem is the answer."""
    while True:
        out: list[tuple[Unit, Problem | None]] = []
        for u in units:
            touched = {
                i
                for o in units
                if o is not u and o.node is u.node and o.mode == "statements"
                for i in range(o.above + 1, o.below)
            }
            problem = place(u, fork_lines, base_tree, base_lines, touched, forced(u))
            if problem is not None and u.outer is not None:
                units = merge([_wider(u) if o is u else o for o in units], fork_lines)
                break
            out.append((u, problem))
        else:
            pair = _moved(out)
            if pair is None:
                return out
            a, b = pair  # a definition moved within one body: one patch, or it is defined twice between
            a.above, a.below, a.hunks = min(a.above, b.above), max(a.below, b.below), a.hunks + b.hunks
            units = merge([o for o in units if o is not b], fork_lines)


def _defs(text: object) -> set[str]:
    """Names of the definitions a text of statements holds at its top level."""
    try:
        body = ast.parse(textwrap.dedent(str(text))).body
    except SyntaxError:
        return set()
    return {s.name for s in body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _moved(placed: list[tuple[Unit, Problem | None]]) -> tuple[Unit, Unit] | None:
    """Two units of one body where one adds a definition the other removes (the fork moved it):
    apart, whichever lands first leaves the body defining it twice or not at all."""
    found = [(u, _defs(u.params.get("after")), _defs(u.params.get("before"))) for u, pr in placed if pr is None]
    for u, u_after, u_before in found:
        for v, v_after, v_before in found:
            if (
                u is not v
                and u.node is v.node
                and u.mode == v.mode == "statements"
                and (u_after - u_before) & (v_before - v_after)
            ):
                return (u, v) if u.above < v.above else (v, u)
    return None
