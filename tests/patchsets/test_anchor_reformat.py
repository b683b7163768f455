"""Formatting never decides (issue 38, requirement 3): anchors a formatter rewrites, in real verl.

verl 0.3 was formatted by yapf: asserts and conditions continued with a backslash, docstrings
whose closing quotes sit on a line of their own. ``ruff format`` and ``black`` turn ``assert x, \\``
into ``assert x, (`` and pull a docstring that fits onto one line, so a patch whose anchor is
such a statement's first line must still find it. For every such statement of real verl 0.3.0
files, a tagged line goes in right after it (the statement is the patch's ``above`` anchor) and,
separately, right before it (its ``below`` anchor); capture's own machinery drafts the patch
against the file as released, and the patch must apply to the file as each formatter leaves it,
giving the fork's syntax tree.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.patchsets.test_kind_structural_format import apply, drafted

from patchctl import releases
from patchctl.patchsets.kinds.base import EditStatus
from patchctl.patchsets.model import Patch
from patchctl.patchsets.placement.pyparse import split_lines
from patchctl.patchsets.placement.syntax import code_dump

#: file -> how many such anchors it has at least (backslash continuations; docstrings in the last two)
FILES = {
    "verl/protocol.py": 6,
    "verl/trainer/ppo/ray_trainer.py": 6,
    "verl/workers/reward_manager/naive.py": 2,
    "verl/utils/hdfs_io.py": 2,
}
BIN = Path(sys.executable).parent


def formatter(argv: list[str]) -> Callable[[str], str]:
    def run(text: str) -> str:
        return subprocess.run(argv, input=text, capture_output=True, text=True, check=True).stdout

    return run


FORMATTERS = {
    "ruff": formatter([str(BIN / "ruff"), "format", "--isolated", "-"]),
    "black": formatter([str(BIN / "black"), "--quiet", "-"]),
}


def hard_anchors(text: str) -> list[ast.stmt]:
    """Statements whose first line a formatter rewrites: in a function, a backslash continuation;
    a function's or class's docstring of one line of text with spaces or line breaks around it
    (pulled onto one line, its spaces stripped) whose first line holds text."""
    lines = split_lines(text)
    out: dict[int, ast.stmt] = {}
    for fn in ast.walk(ast.parse(text)):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and _loose_docstring(
            fn.body[0], lines
        ):
            out[fn.body[0].lineno] = fn.body[0]
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for s in ast.walk(fn):
                if isinstance(s, ast.stmt) and not hasattr(s, "body") and lines[s.lineno - 1].rstrip().endswith("\\"):
                    out[s.lineno] = s
    return [out[n] for n in sorted(out)]


def _loose_docstring(s: ast.stmt, lines: list[str]) -> bool:
    if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)):
        return False
    value = s.value.value
    return value != value.strip() and len(value.strip().splitlines()) == 1 and lines[s.lineno - 1].strip() != '"""'


def fork_at(text: str, line: int, stmt: ast.stmt) -> str:
    """``text`` with a tagged line at 0-based ``line``, indented as ``stmt``."""
    lines = split_lines(text)
    first = lines[stmt.lineno - 1]
    indent = first[: len(first) - len(first.lstrip())]
    return "".join([*lines[:line], f"{indent}uky_probe = 1  # Uky\n", *lines[line:]])


def norm(text: str) -> str:
    return code_dump(ast.parse(text))


@pytest.fixture(scope="module")
def forks(release_cache: Path) -> dict[str, tuple[str, list[tuple[str, str, Patch]]]]:
    """File -> (its text, [(where, the fork's text, its patch)])."""
    root = releases.materialize("0.3.0.post1")
    out = {}
    for rel in FILES:
        text = (root / rel).read_text(encoding="utf-8")
        made = []
        for s in hard_anchors(text):
            for where, line in (("after", s.end_lineno or s.lineno), ("before", s.lineno - 1)):
                fork = fork_at(text, line, s)
                patch = drafted(text, fork)
                if patch is not None:
                    made.append((f"{where} line {s.lineno}", fork, patch))
        assert len(made) >= FILES[rel], rel
        out[rel] = (text, made)
    return out


@pytest.mark.parametrize("tool", sorted(FORMATTERS))
@pytest.mark.parametrize("rel", FILES)
def test_a_formatter_rewriting_the_anchor_does_not_make_a_conflict(
    forks: dict[str, tuple[str, list[tuple[str, str, Patch]]]], rel: str, tool: str
) -> None:
    text, made = forks[rel]
    target = FORMATTERS[tool](text)
    assert target != text  # the formatter did rewrite the file
    wrong = []
    for where, fork, patch in made:
        status, got = apply(target, patch)
        if status is not EditStatus.CHANGED or norm(got) != norm(fork):
            wrong.append(f"{where}: {status.value}: {got[:200] if status is not EditStatus.CHANGED else 'other tree'}")
    assert not wrong, f"{rel} after {tool}:\n" + "\n".join(wrong)


@pytest.mark.parametrize("tool", sorted(FORMATTERS))
def test_a_fork_edit_that_is_a_reformat_is_already_there_on_a_formatted_base(release_cache: Path, tool: str) -> None:
    """Search-R1 added a trailing comma to ``RayPPOTrainer(...)`` and nothing else; on a base a
    formatter rewrote, the call is the same code in another spelling: already there, no conflict."""
    text = (releases.materialize("0.3.0.post1") / "verl/trainer/main_ppo.py").read_text(encoding="utf-8")
    old = "                                val_reward_fn=val_reward_fn)\n"
    assert old in text
    fork = text.replace(old, "                                val_reward_fn=val_reward_fn,  # Uky\n        )\n")
    patch = drafted(text, fork)
    assert patch is not None
    status, got = apply(text, patch)
    assert status is EditStatus.CHANGED and got == fork  # on the base as released it is carried
    status, got = apply(FORMATTERS[tool](text), patch)
    assert status is EditStatus.UNCHANGED, got
    assert "already there" in got
