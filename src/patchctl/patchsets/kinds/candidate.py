"""The best candidate place for a structural patch that conflicts, for ``apply --conflicts=markers``.

Where the patch's anchors still lead somewhere, that place is the candidate (its text differs
from the patch's original: that is the conflict). Where they lead nowhere, the candidate is
found the way a person would look: in the patch's scope, the statement whose first line reads
most like the anchor above (at least :data:`MIN_RATIO` alike), followed by as many statements
as the patch's original holds, or the statement most like the anchor below, preceded by them,
whichever of the two reads more alike (upstream often rewrites one neighbour and keeps the
other). No candidate is offered below that bar: markers at a guessed
place are worse than a refusal.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass

from patchctl.patchsets.kinds import anchors as st
from patchctl.patchsets.kinds import gaptext, places
from patchctl.patchsets.kinds.places import Params
from patchctl.patchsets.kinds.pyparse import parse_ast, split_lines

MIN_RATIO = 0.6


@dataclass(frozen=True)
class Candidate:
    """Lines ``first``..``last`` (``last == first - 1``: an empty place before line ``first``)."""

    first: int
    last: int
    indent: str
    #: how it was found, for the row's reason
    how: str
    #: where the patch's own anchors led nowhere: the anchors and block headers of this place
    above: tuple[str, ...] = ()
    below: tuple[str, ...] = ()
    blocks: tuple[str, ...] = ()


def propose(text: str, p: Params, path: str) -> Candidate | None:
    near = places.find(text, p, path).near
    if near:  # for a header: the definition's header, as the tree has it
        s = near[0]
        return Candidate(s.first, s.last, s.indent, "where its anchors lead")
    if p.mode != "statements":
        return None
    keys = ([(p.above[-1], True)] if p.above else []) + ([(p.below[0], False)] if p.below else [])
    lines = split_lines(text)
    best: tuple[float, int, list[ast.stmt], tuple[str, ...], str, bool] | None = None
    for scope in st.find_scopes(parse_ast(text, path), p.scope):
        for i, body, blocks in _statements(lines, scope, ()):
            for key, after in keys:  # the anchor above, else the one below, whichever reads more alike
                ratio = difflib.SequenceMatcher(None, st.head(lines, body[i]), key).ratio()
                if ratio >= MIN_RATIO and (best is None or ratio > best[0]):
                    best = (ratio, i, body, blocks, key, after)
    if best is None:
        return None
    ratio, i, body, blocks, key, after = best
    count = gaptext.count_statements(p.before) or 0
    if after:  # the place follows the statement most like the anchor above
        taken, first = body[i + 1 : i + 1 + count], (body[i].end_lineno or body[i].lineno) + 1
        last = (taken[-1].end_lineno or taken[-1].lineno) if taken else first - 1
        above, below = body[i : i + 1], body[i + 1 + count : i + 2 + count]
    else:  # the place precedes the statement most like the anchor below
        taken, last = body[max(i - count, 0) : i], st.first_line(body[i]) - 1
        first = st.first_line(taken[0]) if taken else last + 1
        above, below = body[max(i - count, 0) - 1 : max(i - count, 0)] if i - count > 0 else [], body[i : i + 1]
    line = lines[body[i].lineno - 1]
    side = "after" if after else "before"
    return Candidate(
        first,
        last,
        line[: len(line) - len(line.lstrip())],
        f"{side} line {body[i].lineno}, which reads most like its anchor `{key}` ({ratio:.0%} alike)",
        tuple(st.head(lines, a) for a in above),
        tuple(st.head(lines, b) for b in below),
        blocks,
    )


def _statements(
    lines: list[str], node: ast.AST, blocks: tuple[str, ...]
) -> list[tuple[int, list[ast.stmt], tuple[str, ...]]]:
    """Each statement a patch's ``blocks`` can reach under ``node`` (bodies of loops, branches,
    ``with`` and ``try``), as its index in its body, that body and the block headers leading to it."""
    body: list[ast.stmt] = getattr(node, "body", [])
    out = []
    for i, stmt in enumerate(body):
        out.append((i, body, blocks))
        if isinstance(stmt, st.BLOCKS):
            out += _statements(lines, stmt, (*blocks, st.head(lines, stmt)))
    return out
