"""Inputs (issue 18, requirement 5): empty path options, BOM files, control characters in names."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from patchctl.cli.main import cli
from tests.faults.helpers import make_tree, snapshot

EMPTY_PATHS = [
    ["apply", "--target", ""], ["verify", "-t", ""], ["revert", "-t", ""], ["apply", "-p", ""], ["list", "-p", ""],
    ["capture", "--from", "", "--base", "tree"], ["capture", "--from", "tree", "--base", ""],
    ["capture", "--from", "tree", "--base", "tree", "--out", ""], ["doctor", ""],
    ["doctor", "--signatures", "", "log.txt"], ["matrix", "--versions", "0.6.1", "--repo", ""],
    ["train", "-t", "tree", "--out", ""], ["train", "-t", "tree", "--python", ""],
    ["migrate", "gpu", "--config", ""], ["verify", "--env", "--config", ""],
]


@pytest.mark.parametrize("argv", EMPTY_PATHS, ids=lambda a: " ".join(x or "''" for x in a))
def test_an_empty_path_option_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> None:
    """click reads '' as '.': ``capture --out ''`` replaced the current folder with a patchset."""
    monkeypatch.chdir(tmp_path)
    make_tree(tmp_path / "tree", git=False)
    (tmp_path / "log.txt").write_text("nothing\n")
    before = snapshot(tmp_path)
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 2, result.output
    assert "an empty path names nothing; pass a path (. is the current folder)" in result.output
    assert snapshot(tmp_path) == before
