"""A file the fork rewrote nearly whole keeps every edit (issue 38): Search-R1's README against the
verl commit it was taken from (both Apache-2.0, copied verbatim). Split into one text-hunk patch
per hunk, a later hunk's old text turned up in what an earlier one wrote: the proof on BASE
refused all 15 hunks and capture left the README's edits out. Only the hunks apply would then
misplace are joined now (test_fork_splits.py shows them travelling apart on a release)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.clirun import run

HERE = Path(__file__).parent / "rewritten_readme"


def test_a_rewritten_readme_is_captured_whole_and_proven(tmp_path: Path) -> None:
    base, fork = tmp_path / "base", tmp_path / "fork"
    shutil.copytree(HERE / "base", base)
    shutil.copytree(HERE / "fork", fork)
    code, out = run("capture", "--from", str(fork), "--base", str(base), "--all", "--out", str(tmp_path / "ps"))
    assert code == 0, out
    assert "left out" not in out
    assert "proven byte-identical" in out
