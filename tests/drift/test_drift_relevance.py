"""drift ranks what matters (issue 39, requirement 10): between 0.6.1 and 0.7.0, 7 of its 9
"changed" patches were add-file patches flagged only because PKG-INFO and the README changed
beside them, some 400 of 549 lines. Those are one line now, and not counted as a change."""

from __future__ import annotations

import pytest
from tests.clirun import run

from patchctl.drift.compare import is_metadata

pytestmark = pytest.mark.slow


def test_release_metadata_beside_added_files_is_one_line_not_a_change(release_cache) -> None:
    code, out = run("drift", "--from", "0.6.1", "--to", "0.7.0")
    assert code == 1  # the two code patches did change
    assert out.splitlines()[-1] == (
        "drift: upstream changed under 2 patch(es): vllm-enable-log-requests, triton-cuda-stubs"
    )
    assert "beside the files of 7 patch(es) (test-components, " in out
    assert "only packaging metadata and docs changed (PKG-INFO, README.md, pyproject.toml, setup.py)" in out
    assert "--- a/PKG-INFO" not in out and "+Version: 0.7.0" not in out
    assert len(out.splitlines()) < 200  # was 457


def test_what_counts_as_metadata() -> None:
    assert all(is_metadata(p) for p in ("PKG-INFO", "README.md", "setup.py", "docs/x/y.py", "requirements.txt"))
    assert not any(is_metadata(p) for p in ("verl/trainer/main_ppo.py", "scripts/x.sh", "examples/a.yaml"))


def test_drift_at_80_columns_keeps_its_table_whole(release_cache, monkeypatch) -> None:
    """The versions' headers split and a flags cell ran to 22 lines at 80 columns: the flags,
    listed under each changed patch anyway, leave the table where it would not fit."""
    monkeypatch.setenv("COLUMNS", "80")
    code, out = run("drift", "--from", "0.6.1", "--to", "0.7.0")
    assert code == 1
    table = [ln for ln in out.splitlines() if ln[:1] in "┏┃┡│└"]
    assert table and max(len(ln) for ln in table) <= 80
    assert "flags" not in table[1] + table[2] and "(flags: below, under each patch that changed)" in out
    assert "│ superseded-upstream │" in out  # the outcome whole, not folded
    assert "    ! file renamed: verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py" in out
