"""Long lines of ``list`` and ``doctor`` are folded by patchctl under their label (issue 39,
requirement 12), not wrapped by the terminal at its left edge; words are never split."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tests.clirun import run

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CORPUS = Path(__file__).parent.parent / "doctor" / "corpus"


def _too_long(lines: list[str], width: int) -> list[str]:
    """Lines over ``width`` that hold more than one word after their indentation (a single long
    word, such as a path, may not be split)."""
    return [ln for ln in lines if len(ln) > width and len(ln.split()) > (2 if ":" in ln.split()[0] else 1)]


def test_list_folds_at_80_columns_under_each_label(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out = run("list")
    assert code == 0, out
    lines = out.splitlines()
    assert _too_long(lines, 80) == []
    why = next(i for i, ln in enumerate(lines) if ln.startswith("    why: ") and len(ln) > 60)
    assert lines[why + 1].startswith(" " * 9) and lines[why + 1][9] != " "


def test_doctor_folds_a_finding_under_its_label(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = tomllib.loads((CORPUS / "005-ray-worker-died-connection-code-2.toml").read_text(encoding="utf-8"))
    log = tmp_path / "run.log"
    log.write_text(case["log"], encoding="utf-8")
    monkeypatch.setenv("COLUMNS", "80")
    code, out = run("doctor", str(log))
    assert code == 0, out
    lines = out.splitlines()
    fields = [ln for ln in lines if ln.startswith(("   cause:", "   fix:", "             "))]
    assert fields and all(len(ln) <= 80 or len(ln.split()) <= 2 for ln in fields)
    cause = next(i for i, ln in enumerate(lines) if ln.startswith("   cause:"))
    assert lines[cause + 1].startswith(" " * 13)  # the cause went on under its label
