"""Revert undoes exactly what is intact, refuses as a whole otherwise, and keeps symlinks."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.conftest import git
from tests.faults.helpers import run, snapshot

SERVER = "verl/workers/rollout/vllm_rollout/vllm_async_server.py"


@pytest.mark.slow
def test_a_hand_edited_patch_is_a_conflict_and_nothing_moves(release_tree) -> None:
    tree = release_tree("0.6.1")
    assert run("apply", "-t", str(tree))[0] == 0
    server = tree / SERVER
    server.write_text(
        server.read_text().replace(
            "enable_log_requests=engine_args.enable_log_requests, # Uky", "enable_log_requests=True, # Uky"
        )
    )
    before = snapshot(tree)
    code, out = run("revert", "-t", str(tree), "--json")
    assert code == 1
    doc = json.loads(out)
    status = {r["patch"]: r["status"] for r in doc["results"]}
    assert status.pop("vllm-enable-log-requests") == "conflict"
    assert set(status.values()) == {"held-back"}, "a row claims a revert that did not happen"
    conflict = doc["results"][0]
    assert (
        "enable_log_requests=True (expected engine_args.enable_log_requests): edited since it was applied"
        in conflict["reason"]
    )
    assert "+            enable_log_requests=True, # Uky" in conflict["detail"]
    assert doc["written"] == []
    assert snapshot(tree) == before  # the record is kept, the edited line stays
    # the way out the message gives: restore the line, revert again
    server.write_text(
        server.read_text().replace(
            "enable_log_requests=True, # Uky", "enable_log_requests=engine_args.enable_log_requests, # Uky"
        )
    )
    assert run("revert", "-t", str(tree))[0] == 0
    assert git(tree, "status", "--porcelain") == ""


@pytest.mark.slow
def test_a_patched_file_changed_elsewhere_by_hand_is_a_conflict_with_the_diff(release_tree) -> None:
    """The patch's lines are gone and the file is not what it was before apply: say so, show
    what apply wrote, and keep the record."""
    tree = release_tree("0.6.1")
    assert run("apply", "-t", str(tree), "--only", "vllm-enable-log-requests")[0] == 0
    server = tree / SERVER
    text = server.read_text()
    server.write_text(
        text.replace("            # disable_log_requests=engine_args.disable_log_requests, # Uky\n", "").replace(
            "enable_log_requests=engine_args.enable_log_requests, # Uky", "disable_log_requests=False,"
        )
    )
    before = snapshot(tree)
    code, out = run("revert", "-t", str(tree), "--json")
    doc = json.loads(out)
    assert code == 1
    [row] = doc["results"]
    assert row["status"] == "conflict"
    assert "changed since apply and the patch's lines are not intact there" in row["reason"]
    assert "disable_log_requests=False" in row["detail"]
    assert snapshot(tree) == before


@pytest.mark.slow
def test_revert_without_a_record_reverts_every_intact_patch_at_once(release_tree) -> None:
    """The scripts carry their exports in the shipped file: removing the file takes them along,
    instead of stripping the exports and leaving the scripts behind."""
    tree = release_tree("0.6.1")
    assert run("apply", "-t", str(tree))[0] == 0
    (tree / ".patchctl" / "applied.json").unlink()
    code, out = run("revert", "-t", str(tree), "--json")
    assert code == 0, out
    doc = json.loads(out)
    assert {r["status"] for r in doc["results"]} == {"reverted"}
    assert git(tree, "status", "--porcelain", "--untracked-files=all") == ""
    code, out = run("apply", "-t", str(tree), "--json")
    assert code == 0
    assert "conflict" not in {r["status"] for r in json.loads(out)["results"]}


def test_a_committed_symlink_stays_a_symlink(tmp_path: Path) -> None:
    """A patch whose target is a symlink inside the tree rewrites the file it points to."""
    from tests.faults.helpers import make_patchset, make_tree

    tree = make_tree(tmp_path / "tree", git=False)
    (tree / "verl" / "real_init.py").write_text((tree / "verl" / "__init__.py").read_text())
    (tree / "verl" / "__init__.py").unlink()
    os.symlink("real_init.py", tree / "verl" / "__init__.py")
    ps = make_patchset(tmp_path / "ps", n_files=0)
    before = snapshot(tree)
    assert run("apply", "-t", str(tree), "-p", str(ps))[0] == 0
    assert os.readlink(tree / "verl" / "__init__.py") == "real_init.py"
    assert "# T: set before anything is imported" in (tree / "verl" / "real_init.py").read_text()
    assert run("revert", "-t", str(tree), "-p", str(ps))[0] == 0
    assert snapshot(tree) == before
