"""The unit ``bench_forks.py`` counts: the fork's in-place hunks, and whether a tool placed each.

A hunk is one of ``git diff -U0 base fork``'s hunks in a file both trees hold (a file the fork
added, deleted or renamed is not an in-place edit): the base lines it removes and the fork lines
it adds. Hunks whose lines are all blank are left out (a blank line placed or not is no edit a
maintainer would count). The same test judges patchctl's planned tree and git's result, so
neither tool's own check decides for it:

- its added lines are in the result: a run of result lines, each equal to the hunk's line once
  both are stripped (indentation may follow a block upstream re-indented), that the tool wrote
  (not lines the version already had, told by aligning the result with the version); or,
  where upstream made the same change, a run the version already holds (its removed lines are
  gone from the version, and it holds the added run as often as the fork does);
- its removed lines are gone: a run of the version's lines equal to them that the tool removed,
  or no such run in the version at all.

Several hunks adding the same lines each need their own run. A hunk only one tool placed is
judged **right** when the placed lines sit in the same enclosing definition (``Class.method``;
for YAML and other text, the chain of less-indented lines above) as in the fork, and the result
loads as its file type (:func:`patchctl.patchsets.loads.check`, which also refuses a YAML line
moved under another key and a definition shadowed by a later one).
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass, field

from patchctl.patchsets import loads

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class Hunk:
    """One ``git diff -U0`` hunk of the fork in one file."""

    #: the file, relative to the tree
    path: str
    #: 0-based line in the base where the removed lines start (or after which the added go)
    old: int
    #: 0-based line in the fork where the added lines start
    new: int
    removed: tuple[str, ...]
    added: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.path}:{self.old + 1}"


def parse(path: str, diff: str) -> list[Hunk]:
    """The hunks of one file's ``git diff -U0`` text, all-blank ones left out."""
    heads: list[tuple[int, int, list[str], list[str]]] = []
    for ln in diff.splitlines():
        m = _HUNK.match(ln)
        if m:
            # with no lines on a side, git names the line before the change: 0-based, that is the start
            old = int(m[1]) - (m[2] != "0")
            new = int(m[3]) - (m[4] != "0")
            heads.append((old, new, [], []))
        elif heads and ln[:1] in ("-", "+"):
            heads[-1][2 if ln[0] == "-" else 3].append(ln[1:])
    hunks = [Hunk(path, o, n, tuple(r), tuple(a)) for o, n, r, a in heads]
    return [h for h in hunks if any(x.strip() for x in h.removed + h.added)]


@dataclass
class Placed:
    """Per hunk: placed or not, and where (0-based result line, None when nothing is left to point at)."""

    placed: dict[Hunk, bool] = field(default_factory=dict)
    where: dict[Hunk, int | None] = field(default_factory=dict)


def _runs(lines: list[str], block: tuple[str, ...]) -> list[int]:
    n = len(block)
    return [i for i in range(len(lines) - n + 1) if lines[i : i + n] == list(block)] if n else []


def judge(hunks: list[Hunk], fork: str, version: str | None, result: str | None) -> Placed:
    """Which of one file's ``hunks`` are in ``result`` (a tool's text of the file on ``version``)."""
    out = Placed()
    f = [x.strip() for x in fork.splitlines()]
    v = [x.strip() for x in (version or "").splitlines()]
    r = [x.strip() for x in (result or "").splitlines()]
    new_r, gone_v = set(), set()  # result lines the tool wrote, version lines it removed
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, v, r, autojunk=False).get_opcodes():
        if tag != "equal":
            gone_v.update(range(i1, i2))
            new_r.update(range(j1, j2))
    used_r: set[int] = set()
    used_v: set[int] = set()
    # the alignment may pair a repeated line (a code fence, a closing bracket) with another copy
    # of it; then the count decides: a result holding the run more often than the version did
    spare_add: dict[tuple[str, ...], int] = {}
    spare_rem: dict[tuple[str, ...], int] = {}
    for h in hunks:
        add = tuple(x.strip() for x in h.added)
        rem = tuple(x.strip() for x in h.removed)
        rem_runs = _runs(v, rem)
        gone = not rem or not rem_runs
        where: int | None = None
        for i in rem_runs:
            if all(k in gone_v and k not in used_v for k in range(i, i + len(rem))):
                used_v.update(range(i, i + len(rem)))
                gone, where = True, i
                break
        if not gone:
            spare_rem.setdefault(rem, len(rem_runs) - len(_runs(r, rem)))
            if spare_rem[rem] > 0:
                spare_rem[rem] -= 1
                gone = True
        has = not add
        runs_r = _runs(r, add)
        for j in runs_r:
            span = range(j, j + len(add))
            if all(k in new_r and k not in used_r for k in span):
                used_r.update(span)
                has, where = True, j
                break
        if not has and add:
            spare_add.setdefault(add, len(runs_r) - len(_runs(v, add)))
            if spare_add[add] > 0:
                spare_add[add] -= 1
                has, where = True, next((j for j in runs_r if j in new_r), runs_r[0])
        if not has and add and not rem_runs and len(_runs(v, add)) >= len(_runs(f, add)):
            # upstream made the same change: its removed lines are gone from the version, and the
            # version holds the added ones as often as the fork does (and the result still does)
            upstream = [j for j in _runs(r, add) if not any(k in new_r for k in range(j, j + len(add)))]
            if upstream:
                has, where = True, upstream[0]
        out.placed[h] = has and gone and result is not None
        out.where[h] = where if add else None
    return out


def enclosing(path: str, text: str, line: int) -> str:
    """Where 0-based ``line`` of ``text`` sits: ``Class.method`` for Python that parses, else the
    stripped less-indented lines above it (YAML's key path, a shell function)."""
    lines = text.splitlines()
    if path.endswith(".py"):
        try:
            tree = ast.parse(text)
        except SyntaxError:
            tree = None
        if tree is not None:
            names: list[str] = []
            node: ast.AST = tree
            while True:
                inner = [
                    c
                    for c in ast.iter_child_nodes(node)
                    if isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                    and c.lineno - 1 < line <= (c.end_lineno or c.lineno) - 1
                ]
                if not inner:
                    # a def may sit inside an if/with/try: look one level into compound statements
                    inner = [
                        d
                        for c in ast.iter_child_nodes(node)
                        if isinstance(c, ast.stmt)
                        and not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                        for d in ast.walk(c)
                        if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                        and d.lineno - 1 < line <= (d.end_lineno or d.lineno) - 1
                    ][:1]
                if not inner:
                    return ".".join(names) or "(module)"
                node = inner[0]
                names.append(node.name)  # type: ignore[attr-defined] # a def or class
    chain: list[str] = []
    indent = None
    for ln in reversed(lines[:line]):
        if not ln.strip() or ln.lstrip().startswith("#"):
            continue
        width = len(ln) - len(ln.lstrip())
        if indent is None or width < indent:
            chain.append(ln.strip())
            indent = width
            if width == 0:
                break
    return " > ".join(reversed(chain[1:] if chain and not path.endswith(".py") else chain)) or "(top)"


def fork_place(h: Hunk, base: str, fork: str) -> str:
    """The enclosing definition of the hunk in the fork (its added lines) or the base (removal)."""
    return enclosing(h.path, fork, h.new) if h.added else enclosing(h.path, base, h.old)


def right(h: Hunk, base: str, fork: str, version: str | None, result: str | None, where: int | None) -> str:
    """``right``, or why not: the place differs, or the file no longer loads."""
    if result is None:
        return "no file"
    problem = loads.check(h.path, result, version)
    if problem is not None and not problem.already:
        return f"does not load: {problem.why[:80]}"
    if where is None:
        return "right"
    text = result if h.added else (version or "")
    mine, theirs = fork_place(h, base, fork), enclosing(h.path, text, where)
    return "right" if mine == theirs else f"placed in {theirs[:60]}, fork has {mine[:60]}"


def unloadable(path: str, version: str | None, result: str | None) -> str | None:
    """Why the result of ``path`` no longer loads though the version did (None: it loads)."""
    if result is None or version is None:
        return None
    problem = loads.check(path, result, version)
    return None if problem is None or problem.already else problem.why[:120]
