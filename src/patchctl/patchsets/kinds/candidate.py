"""The best candidate place for a structural patch that conflicts, for ``apply --conflicts=markers``.

Where the patch's anchors still lead somewhere, that place is the candidate (its text differs
from the patch's original: that is the conflict). Where they lead nowhere, the candidate is
found the way a person would look: in the patch's scope, the statement whose first line reads
most like the anchor above (at least :data:`MIN_RATIO` alike), followed by as many statements
as the patch's original holds. No candidate is offered below that bar: markers at a guessed
place are worse than a refusal.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass

from patchctl.patchsets.kinds import anchors as st
from patchctl.patchsets.kinds import places
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
    if p.mode != "statements":
        return None
    near = places.find(text, p, path).near
    if near:
        s = near[0]
        return Candidate(s.first, s.last, s.indent, "where its anchors lead")
    if not p.above:
        return None
    lines = split_lines(text)
    best: tuple[float, ast.stmt, list[ast.stmt], tuple[str, ...]] | None = None
    for scope in st.find_scopes(parse_ast(text, path), p.scope):
        for stmt, rest, blocks in _statements(lines, scope, ()):
            ratio = difflib.SequenceMatcher(None, st.head(lines, stmt), p.above[-1]).ratio()
            if ratio >= MIN_RATIO and (best is None or ratio > best[0]):
                best = (ratio, stmt, rest, blocks)
    if best is None:
        return None
    ratio, stmt, rest, blocks = best
    count = st.count_statements(p.before) or 0
    first = (stmt.end_lineno or stmt.lineno) + 1
    taken = rest[:count]
    last = (taken[-1].end_lineno or taken[-1].lineno) if taken else first - 1
    after = rest[count : count + 1]
    anchor = lines[stmt.lineno - 1]
    return Candidate(
        first,
        last,
        anchor[: len(anchor) - len(anchor.lstrip())],
        f"after line {stmt.lineno}, which reads most like its anchor `{p.above[-1]}` ({ratio:.0%} alike)",
        (st.head(lines, stmt),),
        tuple(st.head(lines, a) for a in after),
        blocks,
    )


def _statements(
    lines: list[str], node: ast.AST, blocks: tuple[str, ...]
) -> list[tuple[ast.stmt, list[ast.stmt], tuple[str, ...]]]:
    """Each statement a patch's ``blocks`` can reach under ``node`` (bodies of loops, branches,
    ``with`` and ``try``), with the statements after it and the block headers leading to it."""
    body: list[ast.stmt] = getattr(node, "body", [])
    out = []
    for i, stmt in enumerate(body):
        out.append((stmt, body[i + 1 :], blocks))
        if isinstance(stmt, st.BLOCKS):
            out += _statements(lines, stmt, (*blocks, st.head(lines, stmt)))
    return out
