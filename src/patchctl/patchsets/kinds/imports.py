"""A structural patch that only adds imports to a module, placed as a set-add (issue 38 requirement 2).

An import the fork added used to be found like any statement, by the imports around it: as
soon as upstream added or re-ordered an import next to it, the anchors no longer read and the
patch conflicted, and with it every patch that uses the name. Where its anchors still lead to
its place it goes there as before (that is how capture reproduces the fork byte for byte);
where they do not, the names it adds are added to the module's imports, wherever upstream put
its own:

- a name the module already imports (from the same module, under the same name) is there:
  nothing is written for it, and a patch whose names are all there is already applied;
- the others are written after the last import of the module's leading imports, each of the
  fork's statements as the fork spelled it where all its names are missing, else cut down to the
  missing names (``from m import a, b  # Uky`` with ``a`` already imported gives
  ``from m import b  # Uky``).

A patch qualifies when its scope is the module, it sits in no block, both of its texts hold
nothing but import statements, and it keeps every name its original imports (it only adds).
Revert removes exactly the lines apply wrote (kept in the target's record).
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

from patchctl.patchsets.placement.places import Params
from patchctl.patchsets.placement.pyparse import split_lines

#: (module as written with its leading dots, or "" for ``import x``; imported name; bound name)
Binding = tuple[str, str, str]


def _module(node: ast.Import | ast.ImportFrom) -> str:
    return "." * node.level + (node.module or "") if isinstance(node, ast.ImportFrom) else ""


def _bindings(node: ast.Import | ast.ImportFrom) -> list[Binding]:
    mod = _module(node)
    return [(mod, a.name, a.asname or (a.name if mod else a.name.split(".")[0])) for a in node.names]


def _imports(text: str) -> list[ast.Import | ast.ImportFrom] | None:
    """The statements of ``text`` when every one is an import (None otherwise, or when it does not parse)."""
    try:
        body = ast.parse(textwrap.dedent(text)).body
    except SyntaxError:
        return None
    if not all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in body):
        return None
    return body  # type: ignore[return-value] # every statement is an import, checked above


@dataclass(frozen=True)
class Adds:
    """What an import-only patch adds: its after text's import statements, and the bindings new in it."""

    statements: list[ast.Import | ast.ImportFrom]
    #: the after text, dedented, whose lines the statements' line numbers index
    lines: list[str]
    new: frozenset[Binding]


def adds(p: Params) -> Adds | None:
    """The imports the patch adds, when it is an import-only patch at module level (see the module docstring)."""
    if p.mode != "statements" or p.scope or p.blocks:
        return None
    after, before = _imports(p.after), _imports(p.before)
    if after is None or before is None:
        return None
    mine = {b for s in after for b in _bindings(s)}
    old = {b for s in before for b in _bindings(s)}
    if not mine - old or not old <= mine:
        return None
    return Adds(after, split_lines(textwrap.dedent(p.after)), frozenset(mine - old))


def _bound(tree: ast.Module) -> set[Binding]:
    """Every binding the module's own imports make (top level, and in top-level ``if``/``try`` blocks)."""
    out: set[Binding] = set()
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        s = todo.pop()
        if isinstance(s, (ast.Import, ast.ImportFrom)):
            out.update(_bindings(s))
        elif isinstance(s, (ast.If, ast.Try)):
            todo += [
                *s.body,
                *s.orelse,
                *getattr(s, "finalbody", []),
                *(x for h in getattr(s, "handlers", []) for x in h.body),
            ]
    return out


def missing(tree: ast.Module, a: Adds) -> frozenset[Binding]:
    """The bindings the patch adds that the module does not import yet."""
    return a.new - _bound(tree)


def _insert_after(tree: ast.Module) -> int:
    """The line after which new imports go: the end of the module's leading imports (its docstring
    and ``from __future__`` imports included), 0 for the very top."""
    end = 0
    for i, s in enumerate(tree.body):
        doc = (
            i == 0 and isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)
        )
        if not (doc or isinstance(s, (ast.Import, ast.ImportFrom))):
            break
        end = s.end_lineno or s.lineno
    return end


def _spelled(s: ast.Import | ast.ImportFrom, lines: list[str], want: frozenset[Binding]) -> str:
    """``s`` as the fork wrote it where all its names are wanted, else cut down to the wanted ones
    (the fork's trailing comment, the tag, kept)."""
    own = _bindings(s)
    if all(b in want for b in own):
        return "".join(lines[s.lineno - 1 : s.end_lineno or s.lineno])
    last = lines[(s.end_lineno or s.lineno) - 1].rstrip("\r\n")
    comment = ""
    for tok_start in range(len(last)):
        if last[tok_start] == "#" and _outside_string(last, tok_start):
            comment = "  " + last[tok_start:]
            break
    names = ", ".join(n if n.split(".")[0] == b or n == b else f"{n} as {b}" for m, n, b in own if (m, n, b) in want)
    return (
        (f"from {_module(s)} import {names}" if isinstance(s, ast.ImportFrom) else f"import {names}") + comment + "\n"
    )


def _outside_string(line: str, at: int) -> bool:
    """Whether position ``at`` of one line is outside string quotes (an import line holds none but
    a comment's)."""
    return line[:at].count("'") % 2 == 0 and line[:at].count('"') % 2 == 0


def set_add(text: str, tree: ast.Module, a: Adds) -> tuple[str, str, int] | None:
    """``text`` with the patch's missing imports added; with the text written and the line it starts
    at. None when nothing is missing."""
    want = missing(tree, a)
    if not want:
        return None
    # each a whole line, as the file ends its lines: a fork's last import may end its file without a break
    nl = "\r\n" if "\r\n" in text else "\n"
    added = "".join(
        _spelled(s, a.lines, want).rstrip("\r\n") + nl for s in a.statements if any(b in want for b in _bindings(s))
    )
    lines = split_lines(text)
    at = _insert_after(tree)
    if at and lines[at - 1] and not lines[at - 1].endswith("\n"):
        lines[at - 1] += "\n"
    return "".join([*lines[:at], added, *lines[at:]]), added, at + 1


def remove(text: str, added: str) -> str | None:
    """``text`` without the lines a set-add wrote (``added``, as whole lines, found once); None
    where they are not there exactly once."""
    lines = split_lines(text)
    want = split_lines(added)
    hits = [i for i in range(len(lines) - len(want) + 1) if lines[i : i + len(want)] == want]
    if len(hits) != 1:
        return None
    i = hits[0]
    return "".join([*lines[:i], *lines[i + len(want) :]])
