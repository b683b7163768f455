"""The texts a structural patch carries for a gap, carried to the tree at hand.

:mod:`~patchctl.patchsets.placement.anchors` finds where a gap sits; these work on the patch's own
``before``/``after`` texts: moved to the indentation the scope has now (upstream may have
nested it deeper or lifted it out), and counted in statements so that only windows of that
size are tried. They read the texts alone, never the tree, which is why they live apart.
"""

from __future__ import annotations

import ast
import textwrap


def count_statements(text: str) -> int | None:
    """How many statements a captured text holds at its own level; None when it does not parse."""
    try:
        return len(ast.parse(textwrap.dedent(text)).body)
    except SyntaxError:
        return None


def reindent(text: str, old: str, new: str) -> str | None:
    """``text`` moved from indentation ``old`` to ``new``; None when a line is less indented."""
    if old == new:
        return text
    out = []
    for line in text.splitlines(keepends=True):
        if not line.strip():
            out.append(line)
        elif line.startswith(old):
            out.append(new + line[len(old) :])
        else:
            return None
    return "".join(out)
