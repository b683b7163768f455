"""Which def or class holds which lines of a Python file, by qualified name, and where one went.

The one scope finder of placement (issue 38 requirement 9). A scope is the qualified name of a
``def`` or ``class`` (``RayPPOTrainer.fit``, ``outer.inner``); :func:`definitions` lists every
one of a parsed tree, once per tree, and everything that names scopes reads it:

- the structural kind finds a patch's scope in a file by it (:func:`~.anchors.find_scopes`,
  the definitions reached through defs and classes only), so apply, verify, markers, matrix and
  drift do;
- the ``--repo`` history walk (:mod:`~patchctl.patchsets.history.walk`) and the 3-way check of
  :mod:`~patchctl.patchsets.threeway` ask which scope an edit sits in (:func:`enclosing`),
  whether a text still defines it (:func:`has`), and, when a commit took it out of its file,
  where it went and why (:func:`went`: same name and a body at least half alike, else another
  name and a body :data:`RENAMED` alike).

The table of a text (:func:`table`: each name's first definition, its lines and indentation) is
made from the same parse as the rest of placement (:func:`~.anchors.parsed`, one ``ast`` tree per
text) and kept per text, since a walk asks the same blob many times. Lines are counted as
Python's tokenizer counts them (:func:`~.pyparse.split_lines`), as the tree's line numbers are.
"""

from __future__ import annotations

import ast
import difflib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from patchctl.errors import SourceSyntaxError
from patchctl.patchsets.kinds.text_hunk import shared_ends
from patchctl.patchsets.placement import anchors
from patchctl.patchsets.placement.pyparse import split_lines

#: how alike (difflib's ratio of lines) a scope of the same name must be to count as the moved one
ALIKE = 0.5
#: how alike a def or class of another name must be to count as the edit's, moved and renamed
#: (verl's ``main_task`` became ``TaskRunner.run``): difflib's ratio over the two bodies' lines,
#: decorators and the ``def``/``class`` line left out (they hold the name), each line indented
#: as inside its scope. A name says much; without it the body must say most
RENAMED = 0.8
#: the fewest non-blank body lines a scope needs to be followed under another name: a two-line
#: body (``return x``) is alike to too many others to tell which one it became
RENAMED_LINES = 3
#: texts whose table is kept (a table is small; a walk reads a few hundred blobs)
TABLES = 256


@dataclass(frozen=True)
class Scope:
    #: ``Class.method``, ``function``, ``outer.inner``
    name: str
    #: 1-based first line (its first decorator) and last line, inclusive
    start: int
    end: int
    #: the ``def``/``class`` line's indentation
    indent: str

    @property
    def leaf(self) -> str:
        return self.name.rpartition(".")[2]


@dataclass(frozen=True)
class Region:
    """The upstream lines an edit replaces, or the line it inserts after (``inserted`` set)."""

    #: 1-based, inclusive; an insertion after line N has first == last == N (0: the top)
    first: int
    last: int
    #: the indentation of the first non-blank inserted line, for a pure insertion
    inserted: str | None = None


def lines(text: str) -> list[str]:
    """``text``'s lines as Python's tokenizer counts them (a form feed ends no line): the
    lines a tree's line numbers count."""
    return split_lines(text)


def table_of(tree: ast.AST, src: list[str]) -> dict[str, Scope]:
    """Every def and class of ``tree`` (whose text has lines ``src``) by qualified name, the
    first of a repeated name (:func:`~.anchors.definitions`)."""
    out: dict[str, Scope] = {}
    for d in anchors.definitions(tree):
        if d.name in out:
            continue
        node = d.node
        line = src[node.lineno - 1] if node.lineno <= len(src) else ""
        out[d.name] = Scope(
            d.name, anchors.first_line(node), node.end_lineno or node.lineno, line[: len(line) - len(line.lstrip())]
        )
    return out


_TABLES: OrderedDict[str, dict[str, Scope] | None] = OrderedDict()


def table(text: str, path: str = "") -> dict[str, Scope] | None:
    """Every def and class of ``text`` by qualified name; None: not Python. Parsed as the rest
    of placement parses (:func:`~.anchors.parsed`, so a text placement just read is not parsed
    again; ``path`` is the file's, as placement names it); kept for the last :data:`TABLES` texts."""
    if text in _TABLES:
        _TABLES.move_to_end(text)
        return _TABLES[text]
    try:
        tree = anchors.parsed(text, path)
        found: dict[str, Scope] | None = table_of(tree.tree, tree.lines)
    except (SourceSyntaxError, ValueError):  # ValueError: a NUL byte (Python 3.11)
        found = None
    _TABLES[text] = found
    if len(_TABLES) > TABLES:
        _TABLES.popitem(last=False)
    return found


def has(text: str | None, name: str, path: str = "") -> bool:
    """Whether ``text`` still defines ``name``; a text that does not parse counts as yes (no
    commit is taken for the one that moved a scope because a file was broken in between)."""
    if text is None:
        return False
    found = table(text, path)
    return found is None or name in found


def opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes from ``a`` to ``b``, the lines both share at the top and the bottom
    cut off first: an edit or a commit changes a few lines of a file of thousands, and
    SequenceMatcher's cost grows with the lines it is given (issue 38 req 8)."""
    top, bottom = shared_ends(a, b)
    middle = difflib.SequenceMatcher(None, a[top : len(a) - bottom], b[top : len(b) - bottom], autojunk=False)
    out = [(op, i1 + top, i2 + top, j1 + top, j2 + top) for op, i1, i2, j1, j2 in middle.get_opcodes()]
    return [op for op in out if op[0] != "equal"]


def edited(before: str, after: str) -> list[Region]:
    """The regions of ``before`` that ``after`` changes."""
    a, b = lines(before), lines(after)
    out = []
    for op, i1, i2, j1, j2 in opcodes(a, b):
        if op == "equal":
            continue
        if op == "insert":
            added = next((ln for ln in b[j1:j2] if ln.strip()), "")
            out.append(Region(i1, i1, added[: len(added) - len(added.lstrip())]))
        else:
            out.append(Region(i1 + 1, i2))
    return out


def _inside(s: Scope, r: Region) -> bool:
    if r.inserted is None:
        return s.start <= r.first and r.last <= s.end
    # an insertion after the scope's last line belongs to it only when indented into its body
    return s.start <= r.first <= s.end and (r.first < s.end or len(r.inserted) > len(s.indent))


def enclosing(before: str, after: str, path: str = "") -> str | None:
    """Which scope an edit is in: the innermost def or class of ``before`` (the file at ``path``)
    holding every change from ``before`` to ``after``; None when the edit is at module level,
    spans scopes, or the file is not Python."""
    found = table(before, path)
    regions = edited(before, after)
    if not found or not regions:
        return None
    holders = [s for s in found.values() if all(_inside(s, r) for r in regions)]
    return min(holders, key=lambda s: s.end - s.start).name if holders else None


def body(text: str, s: Scope) -> str:
    """The scope's lines, its indentation taken off (so a method and a function compare alike)."""
    cut = len(s.indent)
    return "".join(ln[cut:] if ln.startswith(s.indent) else ln for ln in lines(text)[s.start - 1 : s.end])


def indented(text: str, indent: str) -> str:
    return "".join(indent + ln if ln.strip() else ln for ln in lines(text))


def splice(text: str, s: Scope, new: str) -> str:
    """``text`` with the scope's lines replaced by ``new`` (already indented)."""
    src = lines(text)
    return "".join(src[: s.start - 1]) + new + "".join(src[s.end :])


def alike(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, lines(a), lines(b), autojunk=False).ratio()


def find(old: str, leaf: str, candidates: list[tuple[str, str]]) -> tuple[str, Scope, float] | None:
    """Where a scope named ``leaf`` whose text was ``old`` (unindented) now is: among the
    ``(path, text)`` candidates, the same-named def or class most like it, at least :data:`ALIKE`."""
    best: tuple[str, Scope, float] | None = None
    for path, text in candidates:
        for s in (table(text, path) or {}).values():
            if s.leaf != leaf:
                continue
            score = alike(old, body(text, s))
            if score >= ALIKE and (best is None or score > best[2]):
                best = (path, s, score)
    return best


def at_line(text: str, line: int, path: str = "") -> str | None:
    """The innermost scope holding 1-based ``line``, for a message."""
    holders = [s for s in (table(text, path) or {}).values() if s.start <= line <= s.end]
    return min(holders, key=lambda s: s.end - s.start).name if holders else None


def inner(text: str) -> list[str]:
    """A scope's lines (as :func:`body` gives them) without its decorators and its ``def`` or
    ``class`` line: what stays when only its name changes."""
    src = lines(text)
    for i, ln in enumerate(src):
        if ln.lstrip().startswith(("def ", "async def ", "class ")):
            return src[i + 1 :]
    return src


def _kind(text: str) -> str:
    head = next((ln.lstrip() for ln in lines(text) if ln.lstrip().startswith(("def ", "async def ", "class "))), "")
    return "class" if head.startswith("class ") else "def"


def renamed(old: str, candidates: list[tuple[str, str, frozenset[str]]]) -> tuple[str, Scope, float] | None:
    """Where a scope whose text was ``old`` (unindented) went under another name: among the
    ``(path, text, names the file defined before)`` candidates, the def (or class, as ``old``
    is) of a name new to its file whose body is most like ``old``'s, at least :data:`RENAMED`.
    A scope that kept its name is no candidate: it is another one, which ``old`` may resemble."""
    mine = inner(old)
    if sum(1 for ln in mine if ln.strip()) < RENAMED_LINES:
        return None
    kind = _kind(old)
    best: tuple[str, Scope, float] | None = None
    for path, text, before in candidates:
        for s in (table(text, path) or {}).values():
            if s.name in before:
                continue
            theirs = body(text, s)
            if _kind(theirs) != kind:
                continue
            m = difflib.SequenceMatcher(None, mine, inner(theirs), autojunk=False)
            if m.real_quick_ratio() < RENAMED or m.quick_ratio() < RENAMED:
                continue
            score = m.ratio()
            if score >= RENAMED and (best is None or score > best[2]):
                best = (path, s, score)
    return best


@dataclass(frozen=True)
class Went:
    """Where a scope a commit took out of its file went (:func:`went`)."""

    path: str
    #: the scope there (its name, lines and indentation in that file's text)
    scope: Scope
    #: how alike its body is to the one that left (difflib's ratio)
    score: float
    #: found under another name (:func:`renamed`), not its own (:func:`find`)
    renamed: bool

    @property
    def why(self) -> str:
        """What the move's message adds: how a scope under another name was told to be it."""
        return f" (renamed; its body {self.score:.0%} alike)" if self.renamed else ""


def went(
    old: str,
    scope: Scope,
    candidates: list[tuple[str, str]],
    defined_before: Callable[[], list[tuple[str, str, frozenset[str]]]],
) -> Went | None:
    """Where ``scope`` of text ``old`` went, among the ``(path, text)`` candidates (the files of
    the commit that took it away), and why: a def or class of its name at least :data:`ALIKE`
    alike (:func:`find`), else one of a name new to its file at least :data:`RENAMED` alike
    (:func:`renamed`; ``defined_before`` gives the candidates with the names each file defined
    before, asked only then). None: it went nowhere alike."""
    was = body(old, scope)
    found = find(was, scope.leaf, candidates)
    if found is not None:
        return Went(found[0], found[1], found[2], False)
    moved = renamed(was, defined_before())
    return Went(moved[0], moved[1], moved[2], True) if moved is not None else None
