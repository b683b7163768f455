"""Where a run of statements sits in a Python module, described without line numbers.

The ``structural`` kind and ``patchctl capture`` share this vocabulary:

- a **scope** is the qualified name of a class or function (``RayPPOTrainer.fit``), or ``""``
  for the module; its **body** is the list of statements directly inside it;
- a **window** is a run of consecutive statements of a body, named by the untouched statements
  around it: the **anchors** are the first lines of up to a few neighbours above and below;
- a window's **gap** is the exact text between its anchors (statements, comments, blank lines),
  which is what a structural patch replaces.

Anchors are stored as the stripped text of a statement's first line (its ``def``/``class``
line for definitions), and compared by syntax (:mod:`patchctl.patchsets.placement.syntax`): a
neighbour that moved, changed below its first line, or was only re-spelled or re-wrapped
still anchors; one whose header changed does not, and the patch reports a conflict rather
than guessing. Everything here uses the standard library's ``ast`` and ``tokenize`` only. The
patch's own texts (re-indented, counted in statements) are :mod:`.gaptext`'s.
"""

from __future__ import annotations

import ast
import tokenize
import weakref
from collections.abc import Iterator
from functools import lru_cache

from patchctl.patchsets.placement import syntax as sx
from patchctl.patchsets.placement.pyparse import parse_ast, split_lines
from patchctl.records import field, record, replace

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
#: statements whose ``body`` a patch may sit inside, named by their header (``params.blocks``)
BLOCKS = _BLOCKS = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try)


def first_line(stmt: ast.stmt) -> int:
    """The first line a statement occupies, its decorators included."""
    decorators: list[ast.expr] = getattr(stmt, "decorator_list", None) or []
    return min([stmt.lineno, *(d.lineno for d in decorators)])


def head(lines: list[str], stmt: ast.stmt) -> str:
    """The anchor text of a statement: its ``def``/``class``/first line, stripped."""
    return lines[stmt.lineno - 1].strip()


def header_end(lines: list[str], node: ast.stmt) -> int:
    """The line of the colon that ends a ``def``/``class`` header (annotations may hold colons)."""
    source = iter(lines[node.lineno - 1 :])
    depth = 0
    try:
        for tok in tokenize.generate_tokens(lambda: next(source, "")):
            if tok.type == tokenize.OP:
                if tok.string in "([{":
                    depth += 1
                elif tok.string in ")]}":
                    depth -= 1
                elif tok.string == ":" and depth == 0:
                    return node.lineno + tok.start[0] - 1
    except (tokenize.TokenError, SyntaxError):
        pass
    body = getattr(node, "body", None)
    return body[0].lineno - 1 if body else node.lineno


#: the fields that hold statements, in the order ``ast`` lists them: a def is a statement
_BODIES = frozenset(("body", "handlers", "orelse", "finalbody", "cases"))


@record(frozen=True)
class Def:
    """One ``def`` or ``class`` of a tree: the scope finder's unit (:func:`definitions`)."""

    #: ``Class.method``, ``function``, ``outer.inner``: the defs and classes around it, by name
    name: str
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    #: reached from the module through defs and classes only (not inside an ``if``, ``try``,
    #: ``for``...): what a structural patch's ``scope`` names
    direct: bool


_DEFINED: weakref.WeakKeyDictionary[ast.AST, tuple[Def, ...]] = weakref.WeakKeyDictionary()


def definitions(tree: ast.AST) -> tuple[Def, ...]:
    """Every def and class of ``tree`` in source order (a def before those inside it), found
    once per tree and kept as long as the tree lives: the one scope finder of placement. A
    structural patch's scope (:func:`find_scopes`) and the history walk's and the 3-way
    check's scope table (:mod:`.scopes`) are both read off it (issue 38 requirement 9)."""
    found = _DEFINED.get(tree)
    if found is None:
        out: list[Def] = []
        _visit(tree, "", True, out)
        found = _DEFINED[tree] = tuple(out)
    return found


def _visit(node: ast.AST, prefix: str, direct: bool, out: list[Def]) -> None:
    for child in _statements(node):
        if isinstance(child, _DEFS):
            name = f"{prefix}{child.name}"
            out.append(Def(name, child, direct))
            _visit(child, f"{name}.", direct, out)
        else:
            _visit(child, prefix, False, out)


def _statements(node: ast.AST) -> Iterator[ast.AST]:
    """The statements (and ``except``/``case`` clauses) directly under ``node``."""
    for f in node._fields:
        if f in _BODIES:
            yield from getattr(node, f)


def find_scopes(tree: ast.Module, scope: str) -> list[ast.AST]:
    """Every node that ``scope`` names (the module for ``""``); more than one is ambiguous. Only
    definitions nested in definitions count (:attr:`Def.direct`): a def inside an ``if`` is no
    scope a patch names."""
    if not scope:
        return [tree]
    return [d.node for d in definitions(tree) if d.direct and d.name == scope]


def descend(lines: list[str], nodes: list[ast.AST], blocks: list[str]) -> list[ast.AST]:
    """The compound statements (``for``, ``if``, ``with``, ``try`` ...) that ``blocks`` names in
    turn under ``nodes``: each a header, read by syntax, whose body holds the next."""
    for header in blocks:
        want = sx.anchor(header)
        nodes = [
            s
            for n in nodes
            for s in getattr(n, "body", [])
            if isinstance(s, _BLOCKS) and sx.reads(want, sx.Stmt(s, lines))
        ]
    return nodes


def body_start(lines: list[str], node: ast.AST) -> int:
    """The first line a gap at the top of ``node``'s body may take."""
    return 1 if isinstance(node, ast.Module) else header_end(lines, node) + 1  # type: ignore[arg-type] # anything but a Module here is a def, class or block


def indent_of(lines: list[str], stmts: list[ast.stmt]) -> str:
    line = lines[stmts[0].lineno - 1]
    return line[: len(line) - len(line.lstrip())]


@record(frozen=True)
class Window:
    """Statements ``stmts[above + 1 : below]`` of one body, and the lines of their gap."""

    node: ast.AST
    stmts: list[ast.stmt]
    #: index of the nearest anchor above (-1: the window starts the body)
    above: int
    #: index of the nearest anchor below (len(stmts): the window ends the body)
    below: int
    #: first and last line (1-based, inclusive) of the gap; ``last == first - 1`` when empty
    first: int
    last: int
    indent: str
    #: found by anchors compared as text only (see :func:`candidates`)
    exact: bool = False

    @property
    def inner(self) -> list[ast.stmt]:
        return self.stmts[self.above + 1 : self.below]

    def text(self, lines: list[str]) -> str:
        return "".join(lines[self.first - 1 : self.last])


def window(lines: list[str], node: ast.AST, above: int, below: int) -> Window | None:
    """The gap between two anchors of ``node``'s body; None when a boundary shares a line.

    Statements joined by ``;`` on one line cannot be told apart line by line, so a window
    whose edge falls between them has no gap.
    """
    stmts: list[ast.stmt] = node.body  # type: ignore[attr-defined] # node is a Module, def, class or block: it has a body
    inner = stmts[above + 1 : below]
    first = stmts[above].end_lineno + 1 if above >= 0 else body_start(lines, node)  # type: ignore[operator] # end_lineno is set on every statement ast.parse makes
    if below < len(stmts):
        last = first_line(stmts[below]) - 1
    elif inner:
        last = inner[-1].end_lineno  # type: ignore[assignment] # set on every statement ast.parse makes
    else:
        last = first - 1
    if above >= 0 and below < len(stmts) and first_line(stmts[below]) <= stmts[above].end_lineno:  # type: ignore[operator] # as above
        return None
    if inner and (first_line(inner[0]) < first or (inner[-1].end_lineno or 0) > last):
        return None
    return Window(node, stmts, above, below, first, last, indent_of(lines, stmts))


def ends(keys: list[sx.Stmt], p: int, below: list[str], exact: bool = False) -> list[int]:
    """Every index ``q > p`` where the statements read the anchors ``below``, in order.

    An empty ``below`` means the window ends the body, so ``len(keys)`` is the only end.
    """
    if not below:
        return [len(keys)]
    want = [sx.anchor(b) for b in below]
    return [q for q in range(p + 1, len(keys) - len(below) + 1) if sx.run_reads(want, keys[q : q + len(below)], exact)]


def keys_of(lines: list[str], stmts: list[ast.stmt], memo: dict[int, list[sx.Stmt]] | None = None) -> list[sx.Stmt]:
    """The statements of a body, ready to be compared with anchors (:mod:`.syntax`). With
    ``memo`` (a :class:`Parsed` file's) each body's are made once, so the header trees and tokens
    they compute are too, however many windows and anchors ask."""
    if memo is None:
        return [sx.Stmt(s, lines) for s in stmts]
    if id(stmts) not in memo:  # the tree that owns ``stmts`` outlives ``memo``: its id stays its own
        memo[id(stmts)] = [sx.Stmt(s, lines) for s in stmts]
    return memo[id(stmts)]


@record(frozen=True)
class Parsed:
    """One text's tree and lines, and its bodies' statements as anchors read them (see :func:`parsed`)."""

    tree: ast.Module
    lines: list[str]
    #: id of a body list of ``tree`` -> its statements as :func:`keys_of` gives them
    keys: dict[int, list[sx.Stmt]] = field(default_factory=dict, repr=False)


@lru_cache(maxsize=4)
def parsed(text: str, path: str) -> Parsed:
    """``text`` parsed once however often it is asked: a patch's check, its apply and the next
    patch of the same file (whose text is this one's result) all read the same text (issue 38
    requirement 9). Nothing here is changed after it is made. ``path`` names the file in a
    syntax error. Four texts are kept (a patch's text and its result, with room for markers):
    a tree costs a few MB, and a matrix's versions share none."""
    return Parsed(parse_ast(text, path), split_lines(text))


def candidates(
    lines: list[str],
    tree: ast.Module,
    scope: str,
    above: list[str],
    below: list[str],
    exact: bool = False,
    blocks: list[str] | None = None,
    memo: dict[int, list[sx.Stmt]] | None = None,
) -> list[Window]:
    """The nearest window after each place where ``scope``'s statements read ``above``, in source order.

    ``above`` lists first lines in file order (the nearest last); an empty list means the
    window starts the body. ``below`` is in file order (the nearest first); empty means it
    ends the body. For each matching place above, the nearest matching place below is taken:
    one window per start, which is what ``params.occurrence`` counts. The text between may
    hold statements reading like ``below`` too; :func:`spread` gives every end of a start.
    ``blocks`` names compound statements inside the scope whose body holds the window.
    ``exact`` compares first lines as text only (the tier tried first: a tagged copy of a
    neighbour reads like it once comments are set aside, and must not become an anchor).
    ``memo``: see :func:`keys_of`.
    """
    out: list[Window] = []
    for node in descend(lines, find_scopes(tree, scope), blocks or []):
        stmts: list[ast.stmt] = node.body  # type: ignore[attr-defined] # node is a Module, def, class or block: it has a body
        keys = keys_of(lines, stmts, memo)
        want = [sx.anchor(a) for a in above]
        starts = (
            [-1]
            if not above
            else [
                p
                for p in range(len(above) - 1, len(stmts))
                if sx.run_reads(want, keys[p - len(above) + 1 : p + 1], exact)
            ]
        )
        for p in starts:
            q = next(iter(ends(keys, p, below, exact)), None)
            if q is not None:
                w = window(lines, node, p, q)
                if w is not None:
                    out.append(replace(w, exact=exact))
    return out


def spread(
    lines: list[str],
    nearest: Window,
    below: list[str],
    sizes: set[int] | None = None,
    memo: dict[int, list[sx.Stmt]] | None = None,
) -> list[Window]:
    """Every window that starts where ``nearest`` does and ends before a run reading ``below``.

    The nearest end is not always the right one: a patch that deletes or replaces a statement
    reading like its own ``below`` anchor ends at a later one (issue 10). ``sizes`` keeps only
    windows of that many statements, the counts a patch's texts hold.
    """
    keys = keys_of(lines, nearest.stmts, memo)
    out = []
    for q in ends(keys, nearest.above, below, nearest.exact):
        if sizes is None or q - nearest.above - 1 in sizes:
            w = window(lines, nearest.node, nearest.above, q)
            if w is not None:
                out.append(replace(w, exact=nearest.exact))
    return out


def header_span(lines: list[str], node: ast.stmt) -> tuple[int, int]:
    """(first, last) line of a definition's header: its decorators through the colon."""
    return first_line(node), header_end(lines, node)


def same_code(a: str, b: str) -> bool:
    """Whether two runs of statements parse to the same tree (comments, spacing and the other
    differences :func:`~patchctl.patchsets.placement.syntax.code_dump` sets aside)."""
    import textwrap

    try:
        return sx.code_dump(ast.parse(textwrap.dedent(a))) == sx.code_dump(ast.parse(textwrap.dedent(b)))
    except SyntaxError:
        return False
