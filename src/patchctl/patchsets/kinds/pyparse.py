"""Parsing helpers shared by the Python kinds."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from patchctl.errors import SourceSyntaxError


def parse_module(text: str, path: str) -> cst.Module:
    """Parse ``text`` or raise a one-line error naming ``path`` and the line."""
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise SourceSyntaxError(path, exc.raw_line, exc.message) from None


def positions(module: cst.Module) -> tuple[cst.Module, dict[cst.CSTNode, int]]:
    """Return the module as seen by a metadata wrapper and each node's first line.

    The wrapper is built without a deep copy: nodes in the returned map are the module's own.
    """
    module, ranges = spans(module)
    return module, {node: rng[0] for node, rng in ranges.items()}


def spans(module: cst.Module) -> tuple[cst.Module, dict[cst.CSTNode, tuple[int, int]]]:
    """Like :func:`positions` but with each node's (first, last) line."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    pos = wrapper.resolve(PositionProvider)
    return wrapper.module, {node: (rng.start.line, rng.end.line) for node, rng in pos.items()}


def dotted(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None
