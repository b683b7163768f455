"""From line hunks of a Python file to structural units: scope, anchors, before and after.

A hunk is widened to whole statements of the innermost class or function body that holds it
(or to a definition's header when only the header changed), hunks that share statements are
merged, and the unit's anchors — the first lines of the untouched neighbours — are grown (up
to :data:`MAX_ANCHORS` on each side) until they name exactly one place in BASE. Units that
cannot be placed without guessing come back as :class:`Problem` with the fork's file and line.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field

from patchctl.capture.hunks import Hunk
from patchctl.patchsets.placement import anchors as st

MAX_ANCHORS = 3
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass
class Unit:
    mode: str  # statements | header
    scope: str
    node: ast.AST  # in the fork
    #: statements mode: indexes of the nearest anchors in node.body (fork)
    above: int = -1
    below: int = -1
    hunks: list[Hunk] = field(default_factory=list)
    #: filled by :func:`place`
    params: dict[str, object] = field(default_factory=dict)
    #: 1-based line range the unit replaces in BASE (inclusive; last = first - 1 when empty)
    base_span: tuple[int, int] = (0, -1)
    fork_span: tuple[int, int] = (0, -1)
    #: headers of the compound statements inside ``scope`` whose body ``node`` is (see capture.nested)
    blocks: list[str] = field(default_factory=list)
    #: the unit one body further out, covering the block statement ``node`` is the body of (None at a
    #: scope's own body): where BASE cannot place this one, capture widens it to that
    outer: Unit | None = None

    @property
    def line(self) -> int:
        """The fork line to name in messages: the first tagged line, else the first changed one."""
        tagged = [n for h in self.hunks for n in h.tagged_lines]
        return min(tagged) if tagged else min(h.fork[0] + 1 for h in self.hunks)


@dataclass(frozen=True)
class Problem:
    line: int
    reason: str


def _inside(lo: int, hi: int, span: tuple[int, int]) -> bool:
    return span[0] <= lo and hi <= span[1]


def find_unit(tree: ast.Module, lines: list[str], hunk: Hunk) -> Unit:
    """The innermost body (or header) that holds the hunk's fork lines."""
    lo, hi = hunk.fork[0] + 1, hunk.fork[1]  # 1-based inclusive; hi < lo for a pure deletion
    node: ast.AST = tree
    scope: list[str] = []
    while True:
        stmts: list[ast.stmt] = node.body  # type: ignore[attr-defined] # a def or class node here, which has a body
        if hi >= lo:
            over = [i for i, s in enumerate(stmts) if st.first_line(s) <= hi and (s.end_lineno or 0) >= lo]
        else:  # a deletion between lines lo - 1 and lo
            over = [i for i, s in enumerate(stmts) if st.first_line(s) < lo and (s.end_lineno or 0) >= lo]
        if len(over) == 1 and isinstance(stmts[over[0]], _DEFS):
            s = stmts[over[0]]
            h1, h2 = st.header_span(lines, s)
            if hi >= lo and _inside(lo, hi, (h1, h2)):
                return Unit("header", ".".join([*scope, s.name]), s, hunks=[hunk])  # type: ignore[attr-defined] # s is a def or class here (_DEFS), which has a name
            if lo > h2:  # below the header: a deletion right under it empties the top of the body
                node, scope = s, [*scope, s.name]  # type: ignore[attr-defined] # as above: s is a def or class
                continue
        above, below = around(stmts, lo, hi)
        return Unit("statements", ".".join(scope), node, above, below, [hunk])


def around(stmts: list[ast.stmt], lo: int, hi: int) -> tuple[int, int]:
    """Indexes of the untouched statements just above and below fork lines ``lo..hi`` (1-based;
    ``hi < lo``: a deletion between lines ``lo - 1`` and ``lo``)."""
    if hi >= lo:
        over = [i for i, s in enumerate(stmts) if st.first_line(s) <= hi and (s.end_lineno or 0) >= lo]
    else:
        over = [i for i, s in enumerate(stmts) if st.first_line(s) < lo and (s.end_lineno or 0) >= lo]
    if over:
        return over[0] - 1, over[-1] + 1
    above = max((i for i, s in enumerate(stmts) if (s.end_lineno or 0) < lo), default=-1)
    return above, above + 1


def _span(lines: list[str], u: Unit) -> tuple[int, int]:
    if u.mode == "header":
        return st.header_span(lines, u.node)  # type: ignore[arg-type] # a header unit's node is a def or class
    w = st.window(lines, u.node, u.above, u.below)
    return (w.first, w.last) if w else (0, -1)


def merge(units: list[Unit], lines: list[str]) -> list[Unit]:
    """Join units that share statements, and fold units that lie inside another unit's span."""
    while True:
        pair = next(((a, b) for a in units for b in units if a is not b and _absorbs(a, b, lines)), None)
        if pair is None:
            return sorted(units, key=lambda u: _span(lines, u))
        a, b = pair
        if a.mode == b.mode == "statements" and a.node is b.node:
            a.above, a.below = min(a.above, b.above), max(a.below, b.below)
        a.hunks += b.hunks
        units.remove(b)


def _absorbs(a: Unit, b: Unit, lines: list[str]) -> bool:
    """Whether ``b`` must become part of ``a``: overlapping windows of one body, or b inside a."""
    if a.mode == b.mode == "statements" and a.node is b.node:
        return b.above < a.below and a.above < b.below
    outer, inner = _span(lines, a), _span(lines, b)
    if inner[1] < inner[0]:  # an empty gap: locate it by its hunk
        inner = (b.hunks[0].fork[0] + 1, b.hunks[0].fork[0])
    return outer[1] >= outer[0] and outer[0] <= inner[0] and inner[1] <= outer[1] and outer != _span(lines, b)


def comment_free_lines(text: str) -> set[int]:
    """Lines where no comment can be written: inside multi-line strings, or ending in ``\\``."""
    out: set[int] = set()
    try:
        open_fstrings: list[int] = []
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            name = tokenize.tok_name[tok.type]
            if name == "FSTRING_START":
                open_fstrings.append(tok.start[0])
            elif name == "FSTRING_END" and open_fstrings:
                out.update(range(open_fstrings.pop(), tok.end[0]))
            elif tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                out.update(range(tok.start[0], tok.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass
    out.update(n for n, ln in enumerate(text.splitlines(), 1) if ln.rstrip().endswith("\\"))
    return out


def untagged_code(unit: Unit, lines: list[str], free: set[int], tag_rx: re.Pattern[str]) -> list[int]:
    """Changed fork lines of a tagged unit that hold code but not the tag, where one could go.

    A tagged comment line of its own (``# Uky: why ...``) tags the block of lines under it,
    up to the next blank line: the record's Triton fix is written that way.
    """
    out = []
    for h in unit.hunks:
        covered = False
        for n in h.fork_lines:
            text = lines[n - 1].strip()
            if not text:
                covered = False
                continue
            if text.startswith("#"):
                covered = covered or bool(tag_rx.search(text))
                continue
            if covered or n in free or tag_rx.search(lines[n - 1]):
                continue
            out.append(n)
    return out


def place(
    unit: Unit, fork_lines: list[str], base_tree: ast.Module, base_lines: list[str], touched: set[int], force: bool
) -> Problem | None:
    """Fill ``unit.params`` from BASE; a Problem when BASE has no single place for it."""
    if unit.mode == "header":
        nodes = [n for n in st.find_scopes(base_tree, unit.scope) if not isinstance(n, ast.Module)]
        if len(nodes) != 1:
            what = "no" if not nodes else f"{len(nodes)}"
            return Problem(
                unit.line, f"BASE has {what} definition(s) named {unit.scope}; the header edit cannot be placed"
            )
        b1, b2 = st.header_span(base_lines, nodes[0])  # type: ignore[arg-type] # nodes are defs or classes
        f1, f2 = st.header_span(fork_lines, unit.node)  # type: ignore[arg-type] # a header unit's node is a def or class
        if base_lines[b1 - 1 : nodes[0].lineno - 1] == fork_lines[f1 - 1 : unit.node.lineno - 1]:  # type: ignore[attr-defined] # statements have line numbers; ast.AST does not say so
            b1, f1 = nodes[0].lineno, unit.node.lineno  # type: ignore[attr-defined]  # decorators untouched: leave them out
        line = fork_lines[unit.node.lineno - 1]  # type: ignore[attr-defined] # as above
        indent = line[: len(line) - len(line.lstrip())]
        unit.params = {
            "mode": "header",
            "scope": unit.scope,
            "indent": indent,
            "before": "".join(base_lines[b1 - 1 : b2]),
            "after": "".join(fork_lines[f1 - 1 : f2]),
        }
        unit.base_span, unit.fork_span = (b1, b2), (f1, f2)
        return None
    w = st.window(fork_lines, unit.node, unit.above, unit.below)
    if w is None:
        return Problem(unit.line, "the edit shares a line with another statement (`;`); split the line in the fork")
    heads = [st.head(fork_lines, s) for s in w.stmts]
    lo, hi = min(h.base[0] for h in unit.hunks) + 1, max(h.base[1] for h in unit.hunks)
    chosen: st.Window | None = None
    seen, up, down = 0, [], []
    for k in range(1, MAX_ANCHORS + 1):
        up_i = list(range(max(unit.above - k + 1, 0), unit.above + 1))
        down_i = list(range(unit.below, min(unit.below + k, len(w.stmts))))
        if k > 1 and any(i in touched for i in up_i + down_i):
            break  # a neighbour another patch changes would make the anchors depend on patch order
        up, down = [heads[i] for i in up_i], [heads[i] for i in down_i]
        found = st.candidates(base_lines, base_tree, unit.scope, up, down, blocks=unit.blocks)
        seen = len(found)
        holding = [c for c in found if c.first <= lo and hi <= c.last]
        if len(found) == 1 and holding:
            chosen = found[0]
        elif force and len(holding) == 1:
            chosen = holding[0]  # apply tries anchors as text first: count the places that way
            exact = [c.first for c in st.candidates(base_lines, base_tree, unit.scope, up, down, True, unit.blocks)]
            unit.params["occurrence"] = (
                exact.index(chosen.first) + 1 if chosen.first in exact else found.index(chosen) + 1
            )
        if chosen is not None or not found:
            break
    if chosen is None:
        scope = unit.scope or "the module"
        if seen == 0:
            return Problem(
                unit.line, f"the statements around the edit are not in {scope} in BASE; it cannot be anchored"
            )
        if seen == 1:
            return Problem(
                unit.line, f"the place its neighbours name in {scope} in BASE does not hold the lines it changes"
            )
        return Problem(
            unit.line,
            f"its neighbours in {scope} fit {seen} places in BASE even with up to {MAX_ANCHORS} "
            "statements of context; pass --include FILE:LINE to take the one at this line",
        )
    unit.params.update(
        {
            "mode": "statements",
            "scope": unit.scope,
            **({"blocks": unit.blocks} if unit.blocks else {}),
            "above": up,
            "below": down,
            "indent": w.indent,
            "before": chosen.text(base_lines),
            "after": w.text(fork_lines),
        }
    )
    unit.base_span, unit.fork_span = (chosen.first, chosen.last), (w.first, w.last)
    return None
