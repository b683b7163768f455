"""Whether an anchor names a statement, decided by syntax rather than text (issue 27).

An anchor is the stripped first line of a statement as capture saw it in BASE. Upstream may
since have changed the quotes, spelled a number another way (``0.`` -> ``0.0``), added or
dropped parentheses or a trailing comma, re-wrapped the line, or edited a comment: none of that
changes the statement, so none of it may make a patch conflict. An anchor **reads** a statement
when, in this order:

1. its text is the statement's first line, stripped (what anchors always were);
2. it parses on its own (a header with ``pass`` as its body) to the same tree as the
   statement's header, bodies and decorators left out;
3. it is a first line cut inside brackets, after a backslash continuation, or inside a
   triple-quoted string (the statement was wrapped, or is a docstring that goes on), and its
   tokens, with comments, layout, string quotes, number spelling and round brackets normalised
   away, begin the statement's tokens normalised alike; the text of a cut string begins the
   statement's string, whitespace runs read as one space (a formatter turns ``x, \\`` into
   ``x, (``, and collapses a docstring that fits onto its first line).

Rule 2 is exact; rule 3 is a prefix, so it is used only where the anchor cannot parse.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import io
import re
import tokenize
from functools import cached_property, lru_cache

from patchctl.records import field, record

#: the fields that hold nested statements: a header's tree is the node without them
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases", "decorator_list")
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}


def code_dump(tree: ast.AST) -> str:
    """A tree as text, with the differences formatters make set aside: a docstring's indentation
    and the spaces around its text (ruff and black re-indent it, and strip the spaces of a one-line one),
    and ``del (a, b)`` for ``del a, b``."""
    tree = copy.deepcopy(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Delete) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple):
            node.targets = node.targets[0].elts
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            node.value.value = "\n".join(ln.strip() for ln in node.value.value.strip().splitlines())
    return ast.dump(tree)


def header_dump(node: ast.stmt) -> str:
    """The statement's tree without its nested statements and decorators, layout-free."""
    if not any(hasattr(node, f) for f in _BODIES):
        return code_dump(node)
    bare = copy.copy(node)
    for f in _BODIES:
        if hasattr(bare, f):
            setattr(bare, f, [])
    return code_dump(bare)


#: a line cut inside a triple-quoted string: the code before it, and the string's text so far
_OPEN_STRING = re.compile(
    r"^(?P<code>(?:[^'\"#]|'[^'\n]*'|\"[^\"\n]*\")*?)(?P<prefix>[rRuUbBfF]{0,2})(?P<quote>'{3}|\"{3})(?P<text>.*)$"
)


def norm_tokens(src: str) -> tuple[tuple[str, ...], bool]:
    """``src``'s tokens with layout and comments dropped, strings and numbers by value, and
    trailing commas before a closing bracket dropped; and whether ``src`` ends complete
    (all brackets closed, every string ended, no backslash continuation at its end)."""
    out: list[str] = []
    depth, complete = 0, True
    if src.rstrip().endswith("\\"):  # the statement goes on on the next line: what is here is a prefix
        src, complete = src.rstrip()[:-1], False
    try:
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type in _SKIP:
                continue
            text = tok.string
            if tok.type in (tokenize.STRING, tokenize.NUMBER):
                with contextlib.suppress(ValueError, SyntaxError):  # an f-string, bytes with escapes: as written
                    text = repr(ast.literal_eval(text))
            elif tok.type == tokenize.ERRORTOKEN and not text.strip():
                continue  # the space before a backslash the tokenizer met at the end
            elif tok.type == tokenize.OP and text in "([{":
                depth += 1
            elif tok.type == tokenize.OP and text in ")]}":
                depth -= 1
                if out and out[-1] == ",":
                    out.pop()
            out.append(text)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        complete = False
    return tuple(out), complete and depth == 0


@record(frozen=True)
class Anchor:
    """An anchor as a patch stores it, with what rules 2 and 3 compare."""

    text: str
    dump: str | None
    tokens: tuple[str, ...]
    complete: bool
    #: the anchor is cut inside a triple-quoted string: that string's text so far, spaces collapsed
    cut_string: str | None = None


@lru_cache(maxsize=4096)
def anchor(text: str) -> Anchor:
    """``text`` (a stored anchor) made ready for :func:`reads`."""
    dump = None
    for src in (text, text.rstrip() + "\n    pass\n"):
        try:
            body = ast.parse(src).body
        except SyntaxError:
            continue
        if len(body) == 1:
            dump = header_dump(body[0])
        break
    tokens, complete = norm_tokens(text)
    cut = _OPEN_STRING.match(text) if dump is None else None
    if cut is not None and cut["quote"] not in cut["text"]:
        return Anchor(text, None, norm_tokens(cut["code"])[0], False, " ".join(cut["text"].split()))
    return Anchor(text, dump, tokens, complete)


@record
class Stmt:
    """A statement of the tree, with its first line and (lazily) its header's tree and tokens."""

    node: ast.stmt
    lines: list[str] = field(repr=False)

    def __init__(self, node: ast.stmt, lines: list[str]) -> None:
        # written out: one is made per statement of a body (anchors), where a record's generic
        # __init__ (patchctl.records) costs a few times a dataclass's
        self.node = node
        self.lines = lines

    @cached_property
    def text(self) -> str:
        return self.lines[self.node.lineno - 1].strip()

    @cached_property
    def dump(self) -> str:
        return header_dump(self.node)

    @cached_property
    def tokens(self) -> tuple[str, ...]:
        end = self.node.end_lineno or self.node.lineno
        body = getattr(self.node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            end = max(self.node.lineno, body[0].lineno - 1)
        src = "".join(self.lines[self.node.lineno - 1 : end]).lstrip()
        return norm_tokens(src)[0]


def reads(a: Anchor, s: Stmt, exact: bool = False) -> bool:
    """Whether anchor ``a`` names statement ``s`` (rules 1 to 3 of the module docstring;
    rule 1 alone when ``exact``)."""
    if a.text == s.text or exact:
        return a.text == s.text
    if a.dump is not None:
        return a.dump == s.dump
    if a.cut_string is not None:
        return _string_goes_on(a, s.tokens)
    if a.complete or not a.tokens:
        return a.tokens == s.tokens
    mine, theirs = _unparenthesised(a.tokens), _unparenthesised(s.tokens)
    return theirs[: len(mine)] == mine


def _string_goes_on(a: Anchor, tokens: tuple[str, ...]) -> bool:
    """Whether ``tokens`` begin with the anchor's code, then a string that begins with its cut text."""
    mine, theirs = _unparenthesised(a.tokens), _unparenthesised(tokens)
    if theirs[: len(mine)] != mine or len(theirs) <= len(mine):
        return False
    try:
        value = ast.literal_eval(theirs[len(mine)])
    except (ValueError, SyntaxError):
        return False
    return isinstance(value, str) and " ".join(value.split()).startswith(a.cut_string or "")


def _unparenthesised(tokens: tuple[str, ...]) -> tuple[str, ...]:
    """Tokens without round brackets: a formatter wraps a long right-hand side in parentheses
    (``x = (`` + newline), which a first line cut before the wrap does not have. Used only to
    locate a cut anchor; the text the patch replaces is still compared as code."""
    return tuple(t for t in tokens if t not in "()")


def run_reads(anchors: list[Anchor], stmts: list[Stmt], exact: bool = False) -> bool:
    """Whether each anchor reads the statement at the same position (equal lengths)."""
    return len(anchors) == len(stmts) and all(reads(a, s, exact) for a, s in zip(anchors, stmts, strict=True))
