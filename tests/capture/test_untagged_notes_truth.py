"""Capture's notes agree with the patchset it writes (issue 39, requirement 3): an untagged edit
two lines below a tagged one, inside the same statement, was reported "not captured" and then
shipped inside the tagged edit's patch. Now it is left out with the statement, by name, unless
``--include`` asks for it; then the note no longer counts it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.clirun import run

pytestmark = pytest.mark.slow

TRACKING = "verl/utils/tracking.py"
UNTAGGED = "series=series + '_x'"


@pytest.fixture
def fork(tmp_path: Path) -> Path:
    """verl 0.6.1 with a tagged line in ``logger.report_scalar(...)`` and an untagged argument
    changed two lines below it, in the same call."""
    from patchctl import releases

    fork = tmp_path / "fork"
    shutil.copytree(releases.materialize("0.6.1"), fork, symlinks=True)
    path = fork / TRACKING
    lines = path.read_text(encoding="utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if line.strip() == "logger.report_scalar(")
    assert lines[at + 2].strip() == "series=series,"
    lines[at] += "  # Uky: a tagged call"
    lines[at + 2] = lines[at + 2].replace("series=series", UNTAGGED)
    path.write_text("\n".join(lines), encoding="utf-8")
    return fork


def _shipped(out: Path) -> str:
    return "".join(p.read_text(encoding="utf-8", errors="replace") for p in out.rglob("*") if p.is_file())


def test_an_untagged_edit_inside_a_tagged_statement_is_left_out_by_name(fork: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, text = run("capture", "--from", str(fork), "--base", "verl==0.6.1", "--out", str(out))
    assert code == 1, text  # nothing proven was written
    assert "1 untagged change(s) not captured" in text
    assert "changes code without the tag inside a tagged edit's statement" in text
    assert f"--include {TRACKING}:" in text
    assert not out.exists() or UNTAGGED not in _shipped(out)


def test_include_captures_it_and_the_note_stops_counting_it(fork: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    at = next(
        n for n, line in enumerate((fork / TRACKING).read_text().split("\n"), 1) if "# Uky: a tagged call" in line
    )
    code, text = run(
        "capture", "--from", str(fork), "--base", "verl==0.6.1", "--out", str(out), "--include", f"{TRACKING}:{at}"
    )
    assert code == 0, text
    assert UNTAGGED in _shipped(out)
    assert "untagged change(s) not captured" not in text
