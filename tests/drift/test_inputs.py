"""Empty path and spec options of drift, bisect, retire and watch are refused before any work."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.drift.helpers import invoke

EMPTY = [
    ["drift", "--from", "", "--to", "0.7.0"],
    ["drift", "--from", "0.6.1", "--to", ""],
    ["drift", "--from", "a", "--to", "b", "--repo", ""],
    ["bisect", "p", "--good", "a", "--bad", "b", "--repo", ""],
    ["retire", "--target", ""],
    ["retire", "--target", "0.7.0", "--out", ""],
    ["retire", "--target", "0.7.0", "--repo", ""],
    ["watch", "--repo", "", "--since", "v1"],
]


@pytest.mark.parametrize("argv", EMPTY, ids=lambda a: " ".join(x or "''" for x in a))
def test_an_empty_path_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    out = invoke(*argv)
    assert out.exit_code == 2, out.output
    assert "an empty path names nothing" in out.output
    assert list(tmp_path.iterdir()) == []
