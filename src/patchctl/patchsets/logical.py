"""A 3-way merge of Python source by logical lines, blind to formatting (issue 38 req 3).

``git merge-file`` merges physical lines, so a target run through ``ruff format`` or ``black``
conflicts with a fork's edit whose neighbours the formatter re-wrapped, though the syntax is the
same: a backslash continuation turned into brackets, a call exploded over several lines with a
trailing comma, a docstring collapsed onto one line. This merge compares what formatters cannot
change instead:

- the file is cut into units: each logical line (a statement or a compound statement's header,
  with its continuation lines, bracketed or backslashed), each comment on a line of its own, and
  each run of blank lines (which separates two changes, as it does for git);
- a unit's key is its syntax tree (docstrings with their layout ignored; redundant brackets,
  quotes, trailing commas and number spelling vanish in the tree), its block depth, and the
  words of its comments; a line that does not parse alone is keyed by its tokens;
- the three key sequences are merged as diff3 does (stable runs where base, fork and target
  agree; a region only one side changed takes that side; both changed it alike takes the
  target; one that differs in blank lines alone, or where upstream inserted the fork's very
  statements among its own, is no conflict; otherwise a conflict), and the result is written
  from physical text: the target's for what the fork left alone, the fork's own lines for what
  the fork changed.

No formatter is run: the keys come from :mod:`tokenize` and :mod:`ast` alone. A fork edit that
is only a reformat has the base's keys, so it merges as "nothing to add".
"""

from __future__ import annotations

import ast
import difflib
import functools
import io
import tokenize
from collections.abc import Hashable
from dataclasses import dataclass

#: tokens that carry no meaning a formatter could not change
_LAYOUT = frozenset({tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING})
#: the key of a run of blank lines between two units
BLANK = ("blank",)


@dataclass(frozen=True)
class Units:
    """A text cut into units: ``keys[i]`` is unit i's key, ``spans[i]`` its physical lines
    ``[start, end)`` (blank lines after it included); ``head`` is the lines before the first unit."""

    lines: tuple[str, ...]
    keys: tuple[Hashable, ...]
    spans: tuple[tuple[int, int], ...]
    head: int

    def text(self, lo: int, hi: int) -> str:
        """The physical text of units ``lo`` to ``hi`` (exclusive)."""
        if lo >= hi:
            return ""
        return "".join(self.lines[self.spans[lo][0] : self.spans[hi - 1][1]])


def merge(mine: str, old: str, new: str) -> str | None:
    """The change from ``old`` to ``mine`` carried into ``new`` by logical lines; None when the
    two changes meet (a conflict) or a text is not Python that :mod:`tokenize` can read."""
    o, a, b = cut(old), cut(mine), cut(new)
    if o is None or a is None or b is None:
        return None
    out = ["".join(b.lines[: b.head])]
    for same, (i_o, jo), (ia, ja), (ib, jb) in _chunks(o.keys, a.keys, b.keys):
        side = "b" if same else _side(o.keys[i_o:jo], a.keys[ia:ja], b.keys[ib:jb])
        if _already(side, (o, i_o, jo), (a, ia, ja), (b, ib, jb)):
            side = "b"
        if side is None:
            return None
        out.append(b.text(ib, jb) if side == "b" else a.text(ia, ja))
    merged = "".join(out)
    if merged and not merged.endswith("\n") and new.endswith("\n"):
        merged += "\n"  # the fork's last line, without a newline, followed by the target's
    return merged


def _side(o: tuple[Hashable, ...], a: tuple[Hashable, ...], b: tuple[Hashable, ...]) -> str | None:
    """Whose text a chunk takes: ``"a"`` where only the fork changed it, ``"b"`` where the fork
    did not (or did as the target did), None where both changed it differently. Blank lines
    separate changes as they do for git, but a formatter adds and drops them (after a ``def``,
    around a nested class), so a chunk that differs in blank lines alone is not a conflict."""
    for x, y, z in ((o, a, b), _solid(o, a, b)):
        if y in (x, z):
            return "b"
        if z == x:
            return "a"
    return None


def _already(side: str | None, *chunk: tuple[Units, int, int]) -> bool:
    """Whether the statements the fork inserts in a chunk both sides changed are upstream's
    already: upstream inserted at the same place statements among which the fork's run is. git,
    blind to that, conflicts there or writes them twice (the fork's above upstream's)."""
    (o, i_o, jo), (a, ia, ja), (b, ib, jb) = chunk
    gone, added, there = _solid(o.keys[i_o:jo], a.keys[ia:ja], b.keys[ib:jb])
    return side is None and not gone and bool(added) and _holds(there, added)


def _holds(keys: tuple[Hashable, ...], run: tuple[Hashable, ...]) -> bool:
    """Whether ``run`` occurs in ``keys`` as a contiguous run."""
    n = len(run)
    return any(keys[i : i + n] == run for i in range(len(keys) - n + 1))


def _solid(*keys: tuple[Hashable, ...]) -> tuple[tuple[Hashable, ...], ...]:
    """Each key sequence without its blank-line units."""
    return tuple(tuple(k for k in ks if k != BLANK) for ks in keys)


@functools.lru_cache(maxsize=64)
def cut(text: str) -> Units | None:
    """``text`` cut into units with their keys; None when it does not tokenize. Cached: the
    base and the fork's text are the same for every target a patch meets."""
    lines = tuple(text.splitlines(keepends=True))
    found: list[tuple[int, int, Hashable]] = []  # (first row, last row + 1, key), rows 0-based
    depth = 0
    toks: list[tokenize.TokenInfo] = []
    notes: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.INDENT:
                depth += 1
            elif tok.type == tokenize.DEDENT:
                depth -= 1
            elif tok.type == tokenize.COMMENT:
                if toks:
                    notes.append(_comment(tok.string))
                else:
                    found.append((tok.start[0] - 1, tok.end[0], ("#", _comment(tok.string))))
            elif tok.type == tokenize.NEWLINE or (tok.type == tokenize.ENDMARKER and toks):
                if toks:
                    found.append((toks[0].start[0] - 1, tok.end[0], ("L", depth, _key(toks, lines), tuple(notes))))
                toks, notes = [], []
            elif tok.type not in _LAYOUT and tok.type != tokenize.ENDMARKER:
                toks.append(tok)
    except (tokenize.TokenError, SyntaxError):  # IndentationError is a SyntaxError
        return None
    if toks:
        return None
    if not found:
        return Units(lines, (), (), len(lines))
    keys: list[Hashable] = []
    spans: list[tuple[int, int]] = []
    for (start, end, key), nxt in zip(found, [f[0] for f in found[1:]] + [len(lines)], strict=True):
        keys.append(key)
        spans.append((start, end))
        if nxt > end:  # the blank lines between two units: a separator, as they are to git
            keys.append(BLANK)
            spans.append((end, nxt))
    return Units(lines, tuple(keys), tuple(spans), found[0][0])


def _comment(text: str) -> str:
    """A comment as formatters may rewrite it: ``#x`` and ``#  x`` are ``# x``."""
    return " ".join(text.lstrip("#").split())


def _key(toks: list[tokenize.TokenInfo], lines: tuple[str, ...]) -> Hashable:
    """A logical line's key: its syntax tree, or its tokens where it does not parse alone."""
    tree = _tree_key(_source(lines, toks[0].start, toks[-1].end), toks[0].string)
    if tree is not None:
        return tree
    return ("tokens", tuple(t.string for t in toks))  # spacing aside, as written


def _source(lines: tuple[str, ...], start: tuple[int, int], end: tuple[int, int]) -> str:
    """The source from the first token to the last (comments after it left out): continuation
    lines sit inside brackets or after a backslash, where their indentation means nothing."""
    if start[0] == end[0]:
        return lines[start[0] - 1][start[1] : end[1]]
    return lines[start[0] - 1][start[1] :] + "".join(lines[start[0] : end[0] - 1]) + lines[end[0] - 1][: end[1]]


@functools.lru_cache(maxsize=16384)
def _tree_key(src: str, first: str) -> str | None:
    """The syntax tree of a logical line as text; cached, as most lines are alike in the base,
    the fork and the target."""
    tree = _parse(src, first)
    try:
        return None if tree is None else ast.dump(_plain_docstrings(tree))
    except RecursionError:  # a statement nested deeper than the dump can walk (untrusted text)
        return None


def _parse(src: str, first: str) -> ast.AST | None:
    """``src`` parsed, alone or in the smallest frame that makes a lone header or decorator parse."""
    if src.rstrip().endswith(":"):
        body = src.rstrip() + " pass\n"
        frames = {
            "else": ["if 1: pass\n" + body, "try: pass\nexcept: pass\n" + body],
            "elif": ["if 1: pass\n" + body],
            "except": ["try: pass\n" + body],
            "finally": ["try: pass\n" + body],
            "case": ["match _:\n " + body],
        }.get(first, [body])
    elif first == "@":
        frames = [src + "\ndef _(): pass\n"]
    else:
        frames = [src]
    for frame in frames:
        try:
            return ast.parse(frame)
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # too deep for the parser too
            continue
    return None


def _plain_docstrings(tree: ast.AST) -> ast.AST:
    """Docstrings (a string alone as a statement) with their layout dropped: formatters
    re-indent them, strip trailing spaces and move a short one onto the quotes' line."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            node.value.value = "\n".join(ln.strip() for ln in node.value.value.splitlines() if ln.strip())
    return tree


Span = tuple[int, int]


def _chunks(
    o: tuple[Hashable, ...], a: tuple[Hashable, ...], b: tuple[Hashable, ...]
) -> list[tuple[bool, Span, Span, Span]]:
    """diff3's chunks of three key sequences: (stable, base span, fork span, target span)."""
    ma, mb = _matched(o, a), _matched(o, b)
    i_o = ia = ib = 0
    out: list[tuple[bool, Span, Span, Span]] = []
    while True:
        n = 0
        while i_o + n < len(o) and ma.get(i_o + n) == ia + n and mb.get(i_o + n) == ib + n:
            n += 1
        if n:
            out.append((True, (i_o, i_o + n), (ia, ia + n), (ib, ib + n)))
            i_o, ia, ib = i_o + n, ia + n, ib + n
        k = next((k for k in range(i_o, len(o)) if k in ma and k in mb), None)
        if k is None:
            if i_o < len(o) or ia < len(a) or ib < len(b):
                out.append((False, (i_o, len(o)), (ia, len(a)), (ib, len(b))))
            return out
        out.append((False, (i_o, k), (ia, ma[k]), (ib, mb[k])))
        i_o, ia, ib = k, ma[k], mb[k]


def _matched(o: tuple[Hashable, ...], x: tuple[Hashable, ...]) -> dict[int, int]:
    """Base index -> index in ``x`` of the units a diff keeps."""
    ids: dict[Hashable, int] = {}
    so = [ids.setdefault(k, len(ids)) for k in o]
    sx = [ids.setdefault(k, len(ids)) for k in x]
    out: dict[int, int] = {}
    for i, j, n in difflib.SequenceMatcher(None, so, sx, autojunk=False).get_matching_blocks():
        out.update((i + k, j + k) for k in range(n))
    return out
