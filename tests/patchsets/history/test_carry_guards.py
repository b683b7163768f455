"""The two guards of ``--repo``'s carry (issue 38 req 4): a carried edit never breaks a patch
placed without it, and a carried edit never lands outside the tree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.drift.helpers import Repo, git, invoke
from tests.patchsets.history.upstream_repo import checkout

from patchctl.patchsets.history.carry import _reanchored
from patchctl.patchsets.history.walk import Carried, State
from patchctl.patchsets.model import Patch

COUNT = "def count(items):\n    total = len(items)\n    return total\n"


def test_a_carried_edit_that_would_break_a_placed_patch_stays_out_with_a_note(tmp_path: Path) -> None:
    """Fork B edits ``count`` at v0.1.0; upstream then renames the file, so B is carried along
    history. Fork A, captured on v0.2.0, edits the same line and is placed directly. B listed
    first would take the line A anchors on: B stays out, A stays applied, and B says why."""
    repo = Repo(tmp_path / "up")
    repo.commit({"verl/count.py": COUNT}, "count", tag="v0.1.0")
    repo.filler(3)
    git(repo.root, "mv", "verl/count.py", "verl/counting.py")
    git(repo.root, "commit", "-q", "-m", "rename count.py")
    repo.commit({"verl/version/version": "0.2.0\n"}, "Release 0.2.0", tag="v0.2.0")
    fork_b = checkout(repo.root, "v0.1.0", tmp_path / "fork-b")
    (fork_b / "verl/count.py").write_text(COUNT.replace("len(items)", "len(list(items))  # Uky: sized"))
    fork_a = checkout(repo.root, "v0.2.0", tmp_path / "fork-a")
    (fork_a / "verl/counting.py").write_text(COUNT.replace("len(items)", "len(items) + 0  # Uky: offset"))
    for name, fork, base in (("b", fork_b, "v0.1.0"), ("a", fork_a, "v0.2.0")):
        done = invoke("capture", "--from", str(fork), "--base", base, "--out", str(tmp_path / name), "--name", name)
        assert done.exit_code == 0, done.output
    target = checkout(repo.root, "v0.2.0", tmp_path / "target")
    done = invoke(
        "apply",
        "--target",
        str(target),
        "--patchset",
        str(tmp_path / "b"),
        "--patchset",
        str(tmp_path / "a"),
        "--repo",
        str(repo.root),
        "--json",
    )
    assert done.exit_code == 0, done.output
    results = {r["patchset"]: r for r in json.loads(done.output)["results"]}
    assert results["a"]["status"] == "applied", done.output
    assert results["b"]["status"] == "not-applicable"
    assert results["b"]["reason"].endswith(
        "along upstream history it goes to verl/counting.py, but placed there it breaks counting-count"
    )
    text = (target / "verl/counting.py").read_text()
    assert "# Uky: offset" in text and "# Uky: sized" not in text


@pytest.mark.parametrize("path", ["../x.py", "/tmp/x.py", "verl/../../x.py"])
def test_a_carried_path_that_leaves_the_tree_is_never_placed(path: str) -> None:
    """A path the walk ends at (a patchset's target, or a rename read from the repository) that
    is absolute or climbs out with ``..`` gives no patch to place."""
    state = State("0" * 40, path, COUNT, COUNT.replace("len(items)", "len(list(items))"), "count")
    patch = Patch("b-count", "count", "sized", "Uky", "structural", (path,), None)
    assert _reanchored(patch, Carried("placed", state)) is None
    inside = State("0" * 40, "verl/x.py", COUNT, COUNT.replace("len(items)", "len(list(items))"), "count")
    moved = _reanchored(patch, Carried("placed", inside))
    assert moved is not None and moved.target == ("verl/x.py",)
