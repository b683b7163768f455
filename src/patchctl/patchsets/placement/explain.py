"""What a structural conflict really is, in one clause a user can act on (issue 27).

A conflict used to say that "the statements around the change" were missing when only one of
them was, or print a whole diff when one statement differed. These name the one thing: which
anchor no statement of the scope reads (compared by syntax, so never a quote or a number's
spelling), or the first statement, by line, whose code differs from what the patch expects.
"""

from __future__ import annotations

import ast
import textwrap

from patchctl.patchsets.placement import anchors as st
from patchctl.patchsets.placement import syntax as sx


def anchors(
    lines: list[str], tree: ast.Module, scope: str, above: list[str], below: list[str], blocks: list[str]
) -> str:
    """Which block or anchor of the patch the scope lacks; or, when it has them all, that they
    are no longer next to each other."""
    where = scope or "the module"
    for n in range(len(blocks)):
        if not st.descend(lines, st.find_scopes(tree, scope), blocks[: n + 1]):
            return f"{where} has no block `{blocks[n]}` around the change (by syntax, not spelling)"
    nodes = st.descend(lines, st.find_scopes(tree, scope), blocks)
    keys = [k for node in nodes for k in st.keys_of(lines, node.body)]  # type: ignore[attr-defined] # these nodes are defs, classes or blocks, which have bodies
    gone = [a for a in [*above, *below] if not any(sx.reads(sx.anchor(a), k) for k in keys)]
    where += "".join(f" > `{b}`" for b in blocks)
    if gone:
        names = ", ".join(f"`{a}`" for a in gone)
        return f"{where} has no statement {names} (an anchor of the patch; by syntax, not spelling)"
    return (
        f"{where} has the statements around the change ({', '.join(f'`{a}`' for a in [*above, *below])}), "
        "but not next to each other in that order"
    )


def _stmts(text: str) -> list[ast.stmt] | None:
    try:
        return ast.parse(textwrap.dedent(text)).body
    except SyntaxError:
        return None


def _first(found: list[ast.stmt], want: list[ast.stmt]) -> tuple[ast.stmt | None, ast.stmt | None]:
    """The innermost first pair of statements that differ (None: that side has run out)."""
    for f, w in zip(found, want, strict=False):
        if sx.code_dump(f) == sx.code_dump(w):
            continue
        if type(f) is type(w) and sx.header_dump(f) == sx.header_dump(w):
            for name in ("body", "orelse", "finalbody"):
                a, b = getattr(f, name, []), getattr(w, name, [])
                if sx.code_dump(ast.Module(a, [])) != sx.code_dump(ast.Module(b, [])):
                    return _first(a, b) if a and b else (f, w)
        return f, w
    if len(found) != len(want):
        n = min(len(found), len(want))
        return (found[n] if n < len(found) else None), (want[n] if n < len(want) else None)
    return None, None


def difference(expected: str, found: str, first: int) -> str:
    """Where ``found`` (the tree's text from line ``first``) departs in code from ``expected``."""
    f_stmts, w_stmts = _stmts(found), _stmts(expected)
    if f_stmts is None or w_stmts is None:
        return "the text there does not parse on its own"
    f, w = _first(f_stmts, w_stmts)
    f_lines, w_lines = textwrap.dedent(found).splitlines(), textwrap.dedent(expected).splitlines()
    if f is None and w is None:
        return "only comments or blank lines differ"
    if f is None:
        return f"the patch expects `{w_lines[w.lineno - 1].strip()}` after line {first + len(f_lines) - 1}"  # type: ignore[union-attr] # w is not None when f is (both None returned above)
    if w is None:
        return (
            f"line {first + f.lineno - 1} reads `{f_lines[f.lineno - 1].strip()}`, "
            "which the patch does not expect there"
        )
    a, b = _leaf(f, w, f, w)
    at_a, at_b = a.lineno, b.lineno  # type: ignore[attr-defined] # _leaf gives statements or expressions: lines
    return (
        f"line {first + at_a - 1} reads `{f_lines[at_a - 1].strip()}` where the patch expects "
        f"`{w_lines[at_b - 1].strip()}`"
    )


def _leaf(a: ast.AST, b: ast.AST, at_a: ast.AST, at_b: ast.AST) -> tuple[ast.AST, ast.AST]:
    """The innermost nodes (with a line) where two trees first differ, so a re-wrapped or
    re-parenthesised line is never the one named: the changed name or value is."""
    if hasattr(a, "lineno") and hasattr(b, "lineno"):
        at_a, at_b = a, b
    if type(a) is not type(b):
        return at_a, at_b
    for name, x in ast.iter_fields(a):
        y = getattr(b, name, None)
        if isinstance(x, list) and isinstance(y, list):
            for u, v in zip(x, y, strict=False):
                if isinstance(u, ast.AST) and isinstance(v, ast.AST):
                    if sx.code_dump(u) != sx.code_dump(v):
                        return _leaf(u, v, at_a, at_b)
                elif u != v:
                    return at_a, at_b
            if len(x) != len(y):
                return at_a, at_b
        elif isinstance(x, ast.AST) and isinstance(y, ast.AST):
            if sx.code_dump(x) != sx.code_dump(y):
                return _leaf(x, y, at_a, at_b)
        elif (x != y and name != "kind") or (x is None) != (y is None):  # a value, or a part only one has
            return at_a, at_b
    return at_a, at_b
