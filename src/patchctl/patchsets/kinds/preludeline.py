"""prelude's insertion done on the text, where a statement (the docstring) precedes the first import.

The libcst path parses the module's head and builds some 240 node dataclasses on import: most of
``patchctl apply``'s start-up (issue 39). In the case verl's own modules have, a docstring or
other simple statement, then blank and comment lines, then the first import, the insertion is a
line-level edit with the same result. This module does that and answers None for every other
shape, which goes to libcst as before. ``tests/patchsets/test_kind_prelude_fast.py`` compares the
two on every module of the cached verl releases and on generated layouts.

The layout libcst gives (``Prelude.apply``): the blank lines right above the import stay above the
block (one blank line when there are none), the block follows, then one blank line, then the
comment lines that sat above the import, then the import.
"""

from __future__ import annotations

import ast

from patchctl.patchsets.placement.pyparse import first_import, split_lines


def insert(text: str, tree: ast.Module, block: str) -> tuple[str, int, str] | None:
    """``text`` with ``block`` before its first import, the count of blank lines kept above it
    (revert's ``blank_before``) and the import's first line; None where libcst must decide."""
    if "\r" in text or "\r" in block or "\t" in block:
        return None
    imp = first_import(tree)
    if imp is None or imp.col_offset != 0:
        return None
    at = tree.body.index(imp)
    if at == 0:  # the comment header at the top of a file is libcst's to split
        return None
    prev = tree.body[at - 1]
    if not isinstance(prev, (ast.Expr, ast.Assign, ast.AnnAssign, ast.ImportFrom)) or prev.end_lineno is None:
        return None
    if prev.end_lineno >= imp.lineno or (at + 1 < len(tree.body) and tree.body[at + 1].lineno == imp.lineno):
        return None
    body = _printed(block)
    if body is None:
        return None
    lines = split_lines(text)
    if not lines[prev.end_lineno - 1].endswith("\n"):
        return None
    gap = lines[prev.end_lineno : imp.lineno - 1]
    if any(line.strip() and not line.lstrip().startswith("#") for line in gap):
        return None  # a continuation or something else between the two statements
    n = 0  # blank as libcst counts it: an empty line (one of only spaces is kept with the comments)
    while n < len(gap) and gap[n] == "\n":
        n += 1
    blanks, rest = gap[:n], gap[n:]
    lead = blanks or ["\n"]
    out = [*lines[: prev.end_lineno], *lead, body, "\n", *rest, *lines[imp.lineno - 1 :]]
    return "".join(out), len(blanks), lines[imp.lineno - 1].strip()


def _printed(block: str) -> str | None:
    """The block as libcst prints it when inserted: its statements with their leading comments,
    trailing blank lines dropped; None when a trailing comment would be dropped too (libcst keeps
    it in the block module's footer, which is not inserted) or the block does not parse."""
    lines = block.rstrip(" \n").split("\n")
    if not lines or not lines[0].strip() or lines[-1].lstrip().startswith("#"):
        return None
    if any(line != line.rstrip() for line in lines):
        return None  # trailing blanks: libcst's whitespace rules decide
    text = "\n".join(lines) + "\n"
    try:
        ast.parse(text)
    except SyntaxError:
        return None
    return text
