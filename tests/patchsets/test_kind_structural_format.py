"""Formatting never decides (issue 27, requirement 3): a property over real verl 0.6.1 files.

For each file, statements spread over it (at every depth: inside loops and branches too) each
get a tagged line inserted after them, and capture's own machinery (pyunits) turns each such
fork into one structural patch against the file (anchored in the innermost block that names
one place, as capture does). The target is then the same file reformatted
as upstream might: ``ruff format`` at another line length (re-wrapping), with single quotes,
numbers spelled another way (``0.0`` -> ``0.``), a comment on every line. Every patch that applied
to the file must apply to each reformatted one, to the same syntax tree, and change nothing but
the inserted line: upstream's formatting stays byte for byte. And where the target really
differs (an anchor or a statement of the patch's original edited), the conflict names that
difference, not a formatting one.
"""

from __future__ import annotations

import ast
import difflib
import io
import keyword
import re
import subprocess
import sys
import tokenize
from collections.abc import Callable
from pathlib import Path

import pytest

from patchctl import releases
from patchctl.capture import nested, pyunits
from patchctl.capture.hunks import diff
from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.model import Patch
from patchctl.patchsets.placement import anchors as st
from patchctl.patchsets.placement.pyparse import split_lines

KIND = KINDS["structural"]
FILES = ["verl/utils/tracking.py", "verl/trainer/ppo/ray_trainer.py", "verl/workers/actor/dp_actor.py"]
TAG = re.compile(r"#\s*Uky\b")
#: how many insertion points per file (spread evenly over its simple statements)
POINTS = 12
RUFF = str(Path(sys.executable).with_name("ruff"))


def ruff(*options: str) -> Callable[[str], str]:
    def run(text: str) -> str:
        return subprocess.run(
            [RUFF, "format", "--isolated", *options, "-"], input=text, capture_output=True, text=True, check=True
        ).stdout

    return run


def tokens_edit(text: str, change: Callable[[tokenize.TokenInfo], str | None]) -> str:
    """``text`` with each token ``change`` answers for replaced by that answer (None: kept)."""
    lines = split_lines(text)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))
    out, at = [], 0
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        new = change(tok)
        if new is None:
            continue
        start = offsets[tok.start[0] - 1] + tok.start[1]
        end = offsets[tok.end[0] - 1] + tok.end[1]
        out += [text[at:start], new]
        at = end
    return "".join(out) + text[at:]


def numbers(text: str) -> str:
    """``0.0`` -> ``0.``, ``1e-06`` -> ``1E-06``: the same values, spelled another way."""

    def change(tok: tokenize.TokenInfo) -> str | None:
        if tok.type != tokenize.NUMBER:
            return None
        if re.fullmatch(r"\d+\.0", tok.string):
            return tok.string[:-1]
        return tok.string.upper() if "e" in tok.string else None

    return tokens_edit(text, change)


def comments(text: str) -> str:
    """A comment at the end of every logical line that has none."""
    lines = split_lines(text)

    def change(tok: tokenize.TokenInfo) -> str | None:
        if tok.type != tokenize.NEWLINE or "#" in lines[tok.start[0] - 1]:
            return None
        return "  # upstream\n"

    return tokens_edit(text, change)


REFORMAT: dict[str, Callable[[str], str]] = {
    "ruff-60": ruff("--line-length", "60"),
    "single-quotes": ruff("--line-length", "120", "--config", "format.quote-style = 'single'"),
    "numbers": numbers,
    "comments": comments,
}


def norm(text: str) -> str:
    """The syntax tree, docstrings' indentation set aside (ruff re-indents them)."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "\n" in node.value:
            node.value = "\n".join(ln.strip() for ln in node.value.strip().splitlines())
        if isinstance(node, ast.Delete) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple):
            node.targets = node.targets[0].elts  # ruff writes `del a, b` as `del (a, b)`
    return ast.dump(tree)


def points(text: str) -> list[int]:
    """Last lines of simple statements inside functions, spread evenly: where lines go in."""
    tree = ast.parse(text)
    found = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.stmt) and not hasattr(node, "body") and node.end_lineno:
                    found.add(node.end_lineno)
    ordered = sorted(found)
    return ordered[:: max(1, len(ordered) // POINTS)][:POINTS]


def insert_after(text: str, line: int, n: int) -> str:
    lines = split_lines(text)
    stmt = next(
        s
        for s in ast.walk(ast.parse(text))
        if isinstance(s, ast.stmt) and s.end_lineno == line and not hasattr(s, "body")
    )
    indent = lines[stmt.lineno - 1][: len(lines[stmt.lineno - 1]) - len(lines[stmt.lineno - 1].lstrip())]
    return "".join([*lines[:line], f"{indent}uky_probe = {n}  # Uky\n", *lines[line:]])


def drafted(base: str, fork: str) -> Patch | None:
    """The structural patch capture drafts for ``fork``'s one edit of ``base``; None if it leaves it out."""
    blines, flines = split_lines(base), split_lines(fork)
    ftree, btree = ast.parse(fork), ast.parse(base)
    units = pyunits.merge([pyunits.find_unit(ftree, flines, h) for h in diff(blines, flines, TAG)], flines)
    assert len(units) == 1
    if nested.place_narrowest(units[0], flines, btree, blines, set(), False) is not None:
        return None
    params = KIND.parse_params(dict(units[0].params), Path("."), Path("patchset.toml"), "p")
    return Patch("p", "t", "w", "Uky", "structural", ("m.py",), params)


def apply(text: str, patch: Patch) -> tuple[EditStatus, str]:
    edit = KIND.apply(text, patch, Context(Path("."), "m.py"))
    return edit.status, edit.text if edit.status is EditStatus.CHANGED else edit.reason


@pytest.fixture(scope="module")
def cases(release_cache: Path) -> dict[str, tuple[str, list[tuple[str, Patch]]]]:
    """File -> (its text, [(the fork's text, its patch)])."""
    root = releases.materialize("0.6.1")
    out = {}
    for rel in FILES:
        text = (root / rel).read_text(encoding="utf-8")
        made = []
        for n, line in enumerate(points(text)):
            fork = insert_after(text, line, n)
            patch = drafted(text, fork)
            if patch is not None:
                made.append((fork, patch))
        assert len(made) >= POINTS - 2, rel  # capture places nearly all of them
        out[rel] = (text, made)
    return out


@pytest.mark.parametrize("how", sorted(REFORMAT))
@pytest.mark.parametrize("rel", FILES)
def test_every_patch_still_applies_after_reformatting(cases, rel: str, how: str) -> None:
    text, made = cases[rel]
    target = REFORMAT[how](text)
    assert norm(target) == norm(text)
    for fork, patch in made:
        status, result = apply(text, patch)
        assert status is EditStatus.CHANGED and result == fork, result
        status, result = apply(target, patch)
        assert status is EditStatus.CHANGED, f"{how}: {result}"
        assert norm(result) == norm(fork)
        ops = difflib.SequenceMatcher(None, split_lines(target), split_lines(result), autojunk=False).get_opcodes()
        changed = [(tag, split_lines(result)[j1:j2]) for tag, _, _, j1, j2 in ops if tag != "equal"]
        assert [tag for tag, _ in changed] == ["insert"] and len(changed[0][1]) == 1, (how, changed)
        assert "uky_probe" in changed[0][1][0]  # only the fork's line came in; upstream's stay as they were


def rename(text: str, stmt: ast.stmt, first_line: bool = False) -> tuple[str, str] | None:
    """``text`` with the first name of ``stmt`` renamed (a real change), and the new name;
    None when the statement has no name (``pass``, ``return 0``), or none on its first line
    where ``first_line`` asks for one there (an anchor is a first line)."""
    lines = split_lines(text)
    src = "".join(lines[stmt.lineno - 1 : stmt.end_lineno])
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(src).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    tok = next((t for t in toks if t.type == tokenize.NAME and not keyword.iskeyword(t.string)), None)
    if tok is None or (first_line and tok.start[0] > 1):
        return None
    row = stmt.lineno - 1 + tok.start[0] - 1
    new = f"renamed_{tok.string}"
    lines[row] = lines[row][: tok.start[1]] + new + lines[row][tok.end[1] :]
    return "".join(lines), new


@pytest.mark.parametrize("how", sorted(REFORMAT))
@pytest.mark.parametrize("rel", FILES)
def test_conflict_messages_name_the_real_difference(cases, rel: str, how: str) -> None:
    """A real change to the anchor above, or to a statement of the patch's original, under a
    reformatting: the conflict names that anchor, or the changed line, and nothing else."""
    text, made = cases[rel]
    lines, tree = split_lines(text), ast.parse(text)
    checked = 0
    for _, patch in made:
        p = patch.params
        w = st.candidates(lines, tree, p.scope, list(p.above), list(p.below), blocks=list(p.blocks))[0]
        above = rename(text, w.stmts[w.above], first_line=True) if p.above else None
        if above is not None:
            status, reason = apply(REFORMAT[how](above[0]), patch)
            assert status is EditStatus.CONFLICT and f"`{p.above[-1]}`" in reason, reason
            assert "has no statement" in reason or "not next to each other" in reason, reason
            assert all(
                f"`{a}`" not in reason.split("has no statement")[-1]
                for a in p.above[:-1]
                if "has no statement" in reason and a != p.above[-1]
            ), reason
            checked += 1
        inner = next((r for r in (rename(text, s) for s in w.inner) if r is not None), None)
        if inner is not None:
            changed, new = inner
            target = REFORMAT[how](changed)
            status, reason = apply(target, patch)
            assert status is EditStatus.CONFLICT, reason
            said = re.search(r"line (\d+) reads `([^`]*)` where the patch expects", reason)
            assert said and new in said.group(2) and new in split_lines(target)[int(said.group(1)) - 1], reason
            checked += 1
    assert checked >= len(made) - 3


@pytest.mark.parametrize("how", ["comments", "numbers", "single-quotes"])
def test_revert_of_a_reformatted_patched_file_removes_only_the_patch(cases, how: str) -> None:
    """Patched, then reformatted upstream, then reverted with no journal: only the fork's line
    goes; the reformatted lines around it stay as they are."""
    _, made = cases["verl/workers/actor/dp_actor.py"]
    for fork, patch in made:
        target = REFORMAT[how](fork)
        edit = KIND.revert(target, patch, Context(Path("."), "m.py"))
        assert edit.status is EditStatus.CHANGED, edit.reason
        ops = difflib.SequenceMatcher(None, split_lines(target), split_lines(edit.text), autojunk=False).get_opcodes()
        gone = [split_lines(target)[i1:i2] for tag, i1, i2, _, _ in ops if tag != "equal"]
        assert [tag for tag, *_ in ops if tag != "equal"] == ["delete"] and "uky_probe" in gone[0][0], (how, gone)
