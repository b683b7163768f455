"""Put a fork's change into upstream's text without re-writing upstream's other lines.

A structural patch replaces a run of statements. Where the tree holds the patch's original as
the same code in other spelling (upstream re-quoted a string, wrote ``0.0`` for ``0.``,
re-wrapped a call), writing the fork's whole ``after`` text would undo upstream's formatting on
lines the fork never touched (issue 27). :func:`fine` writes only the statements the fork
changed instead: each changed run of lines is widened to the innermost statements that hold
it, found at the same place in the tree's text (same syntax tree, so the same path of bodies
and indexes), and only those statements, or the blank/comment lines between them, are
replaced. The result must parse to the fork's tree, else None and the caller falls back to the
whole text.
"""

from __future__ import annotations

import ast
import difflib
import textwrap
from collections.abc import Iterator, Sequence

from patchctl.patchsets.placement.anchors import first_line
from patchctl.patchsets.placement.pyparse import split_lines
from patchctl.patchsets.placement.syntax import code_dump

#: a statement list inside a tree: the (field, index) steps from the module down to it
Path = tuple[tuple[str, int], ...]


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(textwrap.dedent(text))
    except SyntaxError:
        return None


def _lists(node: ast.AST) -> Iterator[tuple[tuple[str, int], list[ast.stmt]]]:
    """Every statement list directly under ``node``, with the step that names it."""
    for name in ("body", "orelse", "finalbody"):
        value = getattr(node, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            yield (name, -1), value
    for name in ("handlers", "cases"):
        for i, child in enumerate(getattr(node, name, None) or []):
            yield (name, i), child.body


def _body(tree: ast.Module, path: Path) -> list[ast.stmt]:
    stmts: list[ast.stmt] = tree.body
    for (name, i), k in zip(path[1::2], path[0::2], strict=False):  # pairs of (statement index, list step)
        node = stmts[k[1]]
        stmts = getattr(node, name) if i < 0 else getattr(node, name)[i].body
    return stmts


def _region(stmts: list[ast.stmt], lo: int, hi: int, path: Path) -> tuple[Path, int, int, bool, bool]:
    """(path, k1, k2, up, down): statements ``k1..k2`` of the innermost list holding lines
    ``lo..hi`` (``hi < lo``: an insertion before line ``lo``); ``up``/``down`` when the change
    reaches into the blank or comment lines above/below them. ``k2 < k1``: a gap only."""

    def end(s: ast.stmt) -> int:
        return s.end_lineno or s.lineno

    if hi >= lo:
        over = [k for k, s in enumerate(stmts) if first_line(s) <= hi and end(s) >= lo]
    else:
        over = [k for k, s in enumerate(stmts) if first_line(s) < lo <= end(s)]
    if len(over) == 1:
        outer = stmts[over[0]]
        for step, inner in _lists(outer):
            a, b = first_line(inner[0]), end(inner[-1])
            # an insertion right under a body's last statement, with a clause (`else:`) below, is in it
            last = b + 1 if b < end(outer) else b
            if (a <= lo and hi <= b) if hi >= lo else (a < lo <= last):
                return _region(inner, lo, hi, (*path, ("stmt", over[0]), step))
    if over:
        k1, k2 = over[0], over[-1]
        return path, k1, k2, lo < first_line(stmts[k1]), hi > end(stmts[k2])
    k = next((i for i, s in enumerate(stmts) if (first_line(s) > hi if hi >= lo else first_line(s) >= lo)), len(stmts))
    return path, k, k - 1, True, True


def _span(tree: ast.Module, lines: list[str], region: tuple[Path, int, int, bool, bool]) -> tuple[int, int]:
    """The 1-based lines ``region`` covers in ``tree`` (whose text is ``lines``).

    Below the last statement of a nested body, the gap runs over the blank and comment lines
    that follow it (up to the next clause's header); at the top, to the end of the text.
    """
    path, k1, k2, up, down = region
    n_lines = len(lines)
    if path and k2 + 1 >= len(_body(tree, path)) and (down or k1 > k2):
        tail = _body(tree, path)[-1]
        n_lines = tail.end_lineno or tail.lineno
        while n_lines < len(lines) and (not lines[n_lines].strip() or lines[n_lines].lstrip().startswith("#")):
            n_lines += 1
    stmts = _body(tree, path)
    last = stmts[k2] if k2 >= 0 else None
    first = stmts[k1] if k1 < len(stmts) else None
    prev = stmts[k1 - 1] if k1 > 0 else None
    nxt = stmts[k2 + 1] if k2 + 1 < len(stmts) else None
    lo = ((prev.end_lineno or prev.lineno) + 1 if prev else 1) if up or first is None else first_line(first)
    hi = (first_line(nxt) - 1 if nxt else n_lines) if down or last is None else (last.end_lineno or last.lineno)
    return lo, hi


def _boundary(ops: Sequence[tuple[str, int, int, int, int]], x: int, side: int) -> int:
    """Where boundary ``x`` of the original's lines falls in the fork's (side -1: first, 1: last)."""
    found = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal" and i1 <= x <= i2:
            found.append(j1 + x - i1)
        elif tag != "equal" and x in (i1, i2):
            found += [j1 if x == i1 else j2, j2 if x == i2 else j1]
    return min(found) if side < 0 else max(found)


def fine(before: str, after: str, found: str) -> str | None:
    """``found`` (the same code as ``before``, other spelling) with ``before``'s changes to
    ``after`` made in place; None when that cannot be done exactly."""
    b_tree, a_tree, t_tree = _parse(before), _parse(after), _parse(found)
    if b_tree is None or a_tree is None or t_tree is None or code_dump(b_tree) != code_dump(t_tree):
        return None
    b, a, t = split_lines(before), split_lines(after), split_lines(found)
    ops = difflib.SequenceMatcher(None, b, a, autojunk=False).get_opcodes()
    spans = [(i1 + 1, i2) for tag, i1, i2, _, _ in ops if tag != "equal"]
    while True:  # widen to statements; join spans that touch, until none does
        regions = [_region(b_tree.body, lo, hi, ()) for lo, hi in spans]
        cover = sorted((*_span(b_tree, b, r), i) for i, r in enumerate(regions))
        joined: list[list[int]] = []
        for lo, hi, _ in cover:
            if joined and lo <= joined[-1][1] + 1:
                joined[-1][1] = max(joined[-1][1], hi)
            else:
                joined.append([lo, hi])
        if len(joined) == len(spans) and all(tuple(j) == s[:2] for j, s in zip(joined, cover, strict=False)):
            break
        spans = [(lo, hi) for lo, hi in joined]
    out = list(t)
    for lo, hi, i in reversed(cover):
        t1, t2 = _span(t_tree, t, regions[i])
        new = a[_boundary(ops, lo - 1, -1) : _boundary(ops, hi, 1)]
        out[t1 - 1 : t2] = new
    text = "".join(out)
    result = _parse(text)
    return text if result is not None and code_dump(result) == code_dump(a_tree) else None
