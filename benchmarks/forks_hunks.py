"""The unit ``bench_forks.py`` counts: the fork's in-place hunks, and whether a tool placed each.

A hunk is one of ``git diff -U0 base fork``'s hunks in a file both trees hold (a file the fork
added, deleted or renamed is not an in-place edit): the base lines it removes and the fork lines
it adds. Hunks that change only whitespace are left out (blank lines, indentation, a newline at
the end: no edit a maintainer would count, and the comparison below strips lines). The same
test judges patchctl's planned tree and git's result, so neither tool's own check decides for it:

- its added lines are in the result (blank lines at either end of the hunk left out: whitespace
  ``git diff`` attached to the edit): a run of result lines, each equal to the hunk's line once
  both are stripped (indentation may follow a block upstream re-indented), that the tool wrote
  (not lines the version already had, told by ``git diff``'s alignment of the result with the
  version; where that pairs a repeated line with another copy, by the result holding the run
  more often than the version); or, where upstream made the same change, a run the version
  already holds (its removed lines are gone from the version, which holds the added run as often
  as the fork does and, for an insertion, more often than the base: not a block the fork moved);
- its removed lines are gone: a run of the version's lines equal to them that the tool removed,
  or no such run in the version at all (lines the hunk removes and adds again do not count:
  ``git diff -U0`` shows a kept line before new ones as removed and added).

Several hunks adding the same lines each need their own run. A hunk only one tool placed is
judged **right** when the placed lines sit in the same enclosing definition (``Class.method``;
for YAML, the chain of less-indented lines above: its key path) as in the fork, and the result
loads as its file type (:func:`patchctl.patchsets.loads.check`, which also refuses a YAML line
moved under another key and a definition shadowed by a later one).
"""

from __future__ import annotations

import ast
import difflib
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

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
    """The hunks of one file's ``git diff -U0`` text, those that change only whitespace left out."""
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
    return [h for h in hunks if _lines(h.removed) != _lines(h.added)]


def _lines(block: tuple[str, ...]) -> list[str]:
    """A block's lines as the judge compares them: stripped, blank ones left out."""
    return [x.strip() for x in block if x.strip()]


def _trimmed(block: tuple[str, ...]) -> tuple[str, ...]:
    """A stripped block without its blank lines at either end: ``git diff -U0`` attaches blank
    or whitespace-only lines next to an edit to its hunk (Skywork-OR1's two after the end of
    ``main``), a whitespace change the judge leaves out for both tools, as it leaves out hunks
    that change only whitespace."""
    lo, hi = 0, len(block)
    while lo < hi and not block[lo]:
        lo += 1
    while hi > lo and not block[hi - 1]:
        hi -= 1
    return block[lo:hi]


@dataclass
class Placed:
    """Per hunk: placed or not, and where (0-based result line, None when nothing is left to point at)."""

    placed: dict[Hunk, bool] = field(default_factory=dict)
    where: dict[Hunk, int | None] = field(default_factory=dict)


def _runs(lines: list[str], block: tuple[str, ...]) -> list[int]:
    n = len(block)
    return [i for i in range(len(lines) - n + 1) if lines[i : i + n] == list(block)] if n else []


def _aligned(version: str, result: str) -> tuple[set[int], set[int]]:
    """(version lines the tool removed, result lines it wrote), 0-based, by ``git diff``'s own
    alignment: the one that cut the fork's hunks, so on the base the fork reads as exactly them."""
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp, "a"), Path(tmp, "b")
        a.write_bytes(version.encode("utf-8", "surrogateescape"))
        b.write_bytes(result.encode("utf-8", "surrogateescape"))
        out = subprocess.run(
            ["git", "diff", "--no-index", "-U0", "--no-color", "--text", str(a), str(b)], capture_output=True
        ).stdout.decode("utf-8", "surrogateescape")
    gone: set[int] = set()
    new: set[int] = set()
    for ln in out.splitlines():
        m = _HUNK.match(ln)
        if m:
            n_old, n_new = int(m[2] or 1), int(m[4] or 1)
            gone.update(range(int(m[1]) - 1, int(m[1]) - 1 + n_old))
            new.update(range(int(m[3]) - 1, int(m[3]) - 1 + n_new))
    return gone, new


def _only(rem: tuple[str, ...], add: tuple[str, ...]) -> tuple[list[tuple[str, ...]], set[int]]:
    """A hunk's lines that really go and come: ``git diff -U0`` may show a line the fork kept as
    removed and added again (``*.lock`` before 15 new lines). Returns the runs of removed lines
    the added ones do not hold again, and the offsets of the added lines that are new."""
    sm = difflib.SequenceMatcher(None, rem, add, autojunk=False)
    kept_r: set[int] = set()
    kept_a: set[int] = set()
    for i, j, n in sm.get_matching_blocks():
        kept_r.update(range(i, i + n))
        kept_a.update(range(j, j + n))
    pieces: list[tuple[str, ...]] = []
    run: list[str] = []
    for i, x in enumerate(rem):
        if i in kept_r:
            pieces += [tuple(run)] if run else []
            run = []
        else:
            run.append(x)
    pieces += [tuple(run)] if run else []
    return pieces, set(range(len(add))) - kept_a


def judge(hunks: list[Hunk], base: str, fork: str, version: str | None, result: str | None) -> Placed:
    """Which of one file's ``hunks`` are in ``result`` (a tool's text of the file on ``version``)."""
    out = Placed()
    f = [x.strip() for x in fork.splitlines()]
    o = [x.strip() for x in base.splitlines()]
    v = [x.strip() for x in (version or "").splitlines()]
    r = [x.strip() for x in (result or "").splitlines()]
    gone_v, new_r = _aligned(version or "", result or "")
    used_r: set[int] = set()
    used_v: set[int] = set()
    # git's alignment may pair a repeated line (a code fence, a closing bracket) with another
    # copy of it; then the count decides: a result holding the run more (less) often than the version
    spare_add: dict[tuple[str, ...], int] = {}
    spare_rem: dict[tuple[str, ...], int] = {}
    for h in hunks:
        add = _trimmed(tuple(x.strip() for x in h.added))
        pieces, fresh = _only(_trimmed(tuple(x.strip() for x in h.removed)), add)
        gone, where = True, None
        for piece in pieces:
            runs_v = _runs(v, piece)
            if not runs_v:
                continue
            hit = next(
                (i for i in runs_v if all(k in gone_v and k not in used_v for k in range(i, i + len(piece)))), None
            )
            if hit is not None:
                used_v.update(range(hit, hit + len(piece)))
                where = hit if where is None else where
                continue
            spare_rem.setdefault(piece, len(runs_v) - len(_runs(r, piece)))
            if spare_rem[piece] > 0:
                spare_rem[piece] -= 1
                continue
            gone = False
        has = not add
        runs_r = _runs(r, add)
        for j in runs_r:
            if all(j + k in new_r and j + k not in used_r for k in fresh):
                used_r.update(j + k for k in fresh)
                has, where = True, j
                break
        if not has and add:
            spare_add.setdefault(add, len(runs_r) - len(_runs(v, add)))
            if spare_add[add] > 0:
                spare_add[add] -= 1
                has, where = True, next((j for j in runs_r if j in new_r), runs_r[0])
        upstream_did = (
            not any(_runs(v, piece) for piece in pieces)
            and len(_runs(v, add)) >= len(_runs(f, add))
            and (bool(pieces) or len(_runs(v, add)) > len(_runs(o, add)))
        )
        if not has and add and upstream_did:
            # upstream made the same change: the lines it removes are gone from the version, which
            # holds the added ones as often as the fork does, and (for an insertion) more often than
            # the base did: not a block the fork only moved
            upstream = [j for j in runs_r if not any(k in new_r for k in range(j, j + len(add)))]
            if upstream:
                has, where = True, upstream[0]
        out.placed[h] = has and gone and result is not None
        out.where[h] = where if add else None
    return out


def enclosing(path: str, text: str, line: int) -> str:
    """Where 0-based ``line`` of ``text`` sits: ``Class.method`` for Python that parses, the
    stripped less-indented lines above it for YAML (its key path); other files have one place."""
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
    if not path.endswith((".yaml", ".yml")):
        return "(file)"  # Markdown, shell, text: no nesting to compare, only whether it loads
    chain: list[str] = []
    here = lines[line] if line < len(lines) else ""
    indent = len(here) - len(here.lstrip())
    for ln in reversed(lines[:line]):
        if not ln.strip() or ln.lstrip().startswith("#"):
            continue
        width = len(ln) - len(ln.lstrip())
        if width < indent:
            chain.append(ln.strip())
            indent = width
            if width == 0:
                break
    return " > ".join(reversed(chain)) or "(top)"


def fork_place(h: Hunk, base: str, fork: str) -> str:
    """The enclosing definition of the hunk in the fork (its added lines) or the base (removal)."""
    return enclosing(h.path, fork, h.new) if h.added else enclosing(h.path, base, h.old)


def right(h: Hunk, base: str, fork: str, version: str | None, result: str | None, where: int | None) -> str:
    """``right``, or why not: the place differs, or the file no longer loads."""
    if result is None:
        return "no file"
    problem = unloadable(h.path, version, result, base, fork)
    if problem is not None:
        return f"does not load: {problem[:80]}"
    if where is None:
        return "right"
    text = result if h.added else (version or "")
    mine, theirs = fork_place(h, base, fork), enclosing(h.path, text, where)
    return "right" if mine == theirs else f"placed in {theirs[:60]}, fork has {mine[:60]}"


def unloadable(path: str, version: str | None, result: str | None, base: str | None, fork: str | None) -> str | None:
    """Why the result of ``path`` no longer loads though the version did (None: it loads).

    Beside the loaders, :func:`~patchctl.patchsets.loads.check` refuses a definition shadowed by
    a later one and a YAML line moved under another key; such a problem is the fork's own, not
    the tool's, when the fork's file has it against the base too (Skywork-OR1 defines
    ``dataprotoitem_to_dataproto`` twice in ``ray_trainer.py``)."""
    if result is None or version is None:
        return None
    problem = loads.check(path, result, version)
    if problem is None or problem.already:
        return None
    if problem.what is None and fork is not None and base is not None and loads.check(path, fork, base) is not None:
        return None
    return problem.why[:120]
