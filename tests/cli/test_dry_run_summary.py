"""``apply --dry-run`` is a summary first (issue 39, requirement 5): a ``git apply --stat`` line per
file, the table marked as a dry run; ``--diff`` gives the whole diff with edits of existing files
before added files, so the two code changes are not buried under 1,400 lines of new scripts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.clirun import run
from tests.conftest import snapshot

from patchctl.cli import dryrun

pytestmark = pytest.mark.slow

CODE = "verl/workers/rollout/vllm_rollout/vllm_async_server.py"


def test_a_dry_run_is_a_stat_summary_and_writes_nothing(release_tree: Callable[[str], Path]) -> None:
    tree = release_tree("0.6.1")
    before = snapshot(tree)
    code, out = run("apply", "--target", str(tree), "--dry-run")
    assert code == 0, out
    assert snapshot(tree) == before
    assert "@@ " not in out and "+++ b/" not in out  # no diff body
    lines = out.splitlines()
    first_new = next(i for i, ln in enumerate(lines) if "(new)" in ln)
    first_code = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith(("verl/", "...")) and "|" in ln)
    assert first_code < first_new
    assert any(ln.startswith(" 12 files changed, ") and "insertions(+)" in ln for ln in lines)
    assert "dry run: nothing written" in out and "dry run: nothing was written" in out


def test_diff_puts_code_edits_before_added_files(release_tree: Callable[[str], Path]) -> None:
    tree = release_tree("0.6.1")
    code, out = run("apply", "--target", str(tree), "--dry-run", "--diff")
    assert code == 0, out
    assert out.index(f"--- a/{CODE}") < out.index("--- /dev/null")
    assert "+            enable_log_requests=engine_args.enable_log_requests, # Uky" in out


def test_diff_without_dry_run_is_a_usage_error(release_tree: Callable[[str], Path]) -> None:
    tree = release_tree("0.6.1")
    before = snapshot(tree)
    code, out = run("apply", "--target", str(tree), "--diff")
    assert code == 2 and "add --dry-run" in out
    assert snapshot(tree) == before


def test_split_and_stat_count_as_git_does() -> None:
    diff = (
        "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
        "--- /dev/null\n+++ b/new.sh\n@@ -0,0 +1,2 @@\n+-- not a header\n+++ nor this\n"
    )
    files = dryrun.split(diff)
    assert [(f.path, f.change, f.insertions, f.deletions) for f in files] == [
        ("x.py", "modified", 1, 1),
        ("new.sh", "added", 2, 0),
    ]
    assert dryrun.stat(files, 80).splitlines() == [
        " x.py         | 2 +-",
        " new.sh (new) | 2 ++",
        " 2 files changed, 3 insertions(+), 1 deletion(-)",
    ]
