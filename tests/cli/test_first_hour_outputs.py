"""Small outputs of the first hour (issue 39, requirement 12): why a fresh release says
``already-applied`` for the scripts' env patches, and ``list``'s own default in its help."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.clirun import run


@pytest.mark.slow
def test_already_applied_on_a_fresh_tree_says_why(release_tree: Callable[[str], Path], monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    code, out = run("apply", "--target", str(release_tree("0.6.1")))
    assert code == 0, out
    rows = [ln for ln in out.splitlines() if "already-applied" in ln]
    assert len(rows) == 3
    assert all("(the file comes with grpo-script-" in ln and "applied in this run" in ln for ln in rows)


def test_list_help_names_its_own_default() -> None:
    code, out = run("list", "--help")
    assert code == 0
    assert "Default: every built-in patchset." in " ".join(out.split())
    assert "Default: uky" not in out
