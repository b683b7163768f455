"""Parsing helpers shared by the Python kinds.

Finding and checking uses the standard library's ``ast`` (a C parser, ~5 ms for a 600-line
module); libcst is imported and used only when a file must actually be rewritten, because
importing it costs ~170 ms and its position metadata ~300 ms per module, which would dominate
``patchctl verify`` on an already-patched tree.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import TYPE_CHECKING

from patchctl.errors import ManifestError, SourceSyntaxError

if TYPE_CHECKING:
    import libcst as cst


def parse_ast(text: str, path: str) -> ast.Module:
    try:
        return ast.parse(text)
    except SyntaxError as exc:
        raise SourceSyntaxError(path, exc.lineno or 0, exc.msg) from None


def parse_module(text: str, path: str) -> cst.Module:
    """Parse ``text`` with libcst or raise a one-line error naming ``path`` and the line."""
    import libcst as cst

    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise SourceSyntaxError(path, exc.raw_line, exc.message) from None


def check_expressions(
    raw: dict[str, object], keys: tuple[str, ...], manifest: Path, patch_id: str, example: str
) -> None:
    """Raise a manifest error naming the key when a parameter among ``keys`` is not an expression."""
    for key in keys:
        if key in raw:
            try:
                ast.parse(str(raw[key]), mode="eval")
            except SyntaxError:
                raise ManifestError(
                    manifest,
                    f"params.{key}",
                    "is not a Python expression",
                    f"write an expression such as {example}",
                    patch_id,
                ) from None


def first_import(tree: ast.Module) -> ast.stmt | None:
    """The module's first top-level import, ``from __future__`` ones aside (they must stay first)."""
    return next(
        (
            st
            for st in tree.body
            if isinstance(st, ast.Import) or (isinstance(st, ast.ImportFrom) and st.module != "__future__")
        ),
        None,
    )


def dotted_ast(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_ast(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def dotted(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a libcst Name/Attribute chain, else None."""
    import libcst as cst

    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def calls_to(tree: ast.Module, callee: str) -> list[ast.Call]:
    """Every call of ``callee`` in source order (the order a libcst visitor meets them)."""
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and dotted_ast(n.func) == callee]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset, -(n.end_lineno or 0), -(n.end_col_offset or 0)))


def same_expr(a: str, b: str) -> bool:
    """Whether two expression strings are the same code, whatever their spacing."""
    try:
        return ast.dump(ast.parse(a, mode="eval")) == ast.dump(ast.parse(b, mode="eval"))
    except SyntaxError:
        return a.strip() == b.strip()


def spans(module: cst.Module) -> tuple[cst.Module, dict[cst.CSTNode, tuple[int, int]]]:
    """Each node's (first, last) line, via libcst's position metadata.

    Costs ~300 ms on a 600-line module: use it when rewriting, not when checking.
    """
    from libcst.metadata import MetadataWrapper, PositionProvider

    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    pos = wrapper.resolve(PositionProvider)
    return wrapper.module, {node: (rng.start.line, rng.end.line) for node, rng in pos.items()}


def positions(module: cst.Module) -> tuple[cst.Module, dict[cst.CSTNode, int]]:
    """Like :func:`spans` but only each node's first line."""
    module, ranges = spans(module)
    return module, {node: rng[0] for node, rng in ranges.items()}


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split where Python's tokenizer splits (not at form feeds).

    ``str.splitlines`` also ends a line at a form feed, a vertical tab, ``\x1c``-``\x1e``,
    ``\x85``, U+2028 and U+2029; where it made no more lines than the text has line feeds (an
    unterminated last line aside), it split nowhere else, and its answer (four times faster
    than the regular expression: the history walk splits a few thousand texts) is this one."""
    lines = text.splitlines(keepends=True)
    if len(lines) == text.count("\n") + (1 if text and not text.endswith("\n") else 0):
        return lines
    return _LINE.findall(text)
