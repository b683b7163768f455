"""capture on a fork built from a real verl release: uky plus hand edits, round trip, neighbours."""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path

import pytest
from tests.capture.forkmaker import GSM8K, PROBE, TRACKING, make_fork
from tests.clirun import run
from tests.conftest import git, snapshot

from patchctl import releases

#: what the captured patchset does on the neighbouring releases (the add-files apply everywhere)
NEIGHBOURS = {
    "0.6.0": {
        "gsm8k-module": "applied",
        "gsm8k-compute-score": "applied",
        "tracking-module": "applied",
        "tracking-log": "applied",
        "vllm-async-server-run-server": "applied",
        "vllm-rollout-spmd-module": "applied",
    },
    "0.7.0": {
        "gsm8k-module": "applied",
        "gsm8k-compute-score": "applied",
        "tracking-module": "applied",
        "tracking-log": "applied",
        "vllm-async-server-run-server": "superseded-upstream",
        "vllm-rollout-spmd-module": "not-applicable",
    },
    "0.5.0": {
        "gsm8k-module": "applied",
        "gsm8k-compute-score": "applied",
        "tracking-module": "applied",
        "tracking-log": "not-applicable",
        "vllm-async-server-run-server": "not-applicable",
        "vllm-rollout-spmd-module": "applied",
    },
}


@pytest.fixture
def fork(release_tree) -> Path:
    """verl 0.6.1 with the uky patchset applied and our own tagged hand edits, uncommitted."""
    tree = release_tree("0.6.1")
    code, out = run("apply", "--target", str(tree))
    assert code == 0, out
    make_fork(tree)
    return tree


def capture(fork: Path, base: str, out: Path, *extra: str) -> dict:
    code, text = run("capture", "--from", str(fork), "--base", base, "--out", str(out), "--json", *extra)
    assert code == 0, text
    return json.loads(text)


def test_round_trip_on_its_release_is_byte_identical(fork: Path, release_tree, tmp_path: Path) -> None:
    before = git(fork, "status", "--porcelain")
    doc = capture(fork, "verl==0.6.1", tmp_path / "mine")
    assert git(fork, "status", "--porcelain") == before, "capture must not touch the fork"
    kinds = {p["id"]: p["kind"] for p in doc["patches"]}
    assert kinds["vllm-async-server-run-server"] == "keyword-rename"
    assert kinds["vllm-rollout-spmd-module"] == "prelude"
    assert kinds["gsm8k-compute-score"] == kinds["gsm8k-module"] == kinds["tracking-log"] == "structural"
    assert kinds["tracking-module"] == "structural" and kinds["uky-probe-sh"] == "add-file"
    assert doc["left_out"] == []

    pristine = tmp_path / "pristine"
    shutil.copytree(releases.materialize("0.6.1"), pristine, symlinks=True)
    code, out = run("apply", "--target", str(pristine), "--patchset", str(tmp_path / "mine"))
    assert code == 0, out
    mine, theirs = snapshot(fork), snapshot(pristine)
    for p in doc["patches"]:
        assert theirs[p["path"]] == mine[p["path"]], p["path"]  # bytes and mode
    assert theirs[PROBE][1] == 0o755
    code, out = run("verify", "--target", str(pristine), "--patchset", str(tmp_path / "mine"))
    assert code == 0 and "verify: ok" in out, out
    code, out = run("revert", "--target", str(pristine), "--patchset", str(tmp_path / "mine"))
    assert code == 0, out
    assert git(pristine, "status", "--porcelain") == ""


def test_manifest_reads_like_a_patchset(fork: Path, tmp_path: Path) -> None:
    capture(fork, "verl==0.6.1", tmp_path / "mine")
    code, out = run("list", "--patchset", str(tmp_path / "mine"), "--json")
    assert code == 0, out
    patches = {p["id"]: p for p in json.loads(out)[0]["patches"]}
    helper = patches["gsm8k-module"]
    assert helper["why"] == "one place for answer clean-up"  # the tag's own text
    assert helper["captured_against"] == "verl 0.6.1"
    assert helper["origin"].endswith(f"({GSM8K}:20)")
    assert patches["tracking-module"]["why"].startswith("TODO: say why")
    text = (tmp_path / "mine" / "patchset.toml").read_text()
    assert "lineno" not in text and 'scope = "FileLogger.log"' in text


def test_base_as_a_git_ref_of_the_fork(fork: Path, tmp_path: Path) -> None:
    """HEAD is the pristine release commit (the fork's edits are uncommitted)."""
    by_ref = capture(fork, "HEAD", tmp_path / "a")
    by_release = capture(fork, "verl==0.6.1", tmp_path / "b")
    assert [p["id"] for p in by_ref["patches"]] == [p["id"] for p in by_release["patches"]]
    # named by its commit and date (issue 38); with no release tag near, the version file is quoted as such
    head = git(fork, "rev-parse", "HEAD").strip()
    assert re.fullmatch(
        rf"verl {head[:12]} \(\d{{4}}-\d\d-\d\d; no release tag before it, its version file says 0\.6\.1\)",
        by_ref["base"],
    ), by_ref["base"]


@pytest.mark.parametrize("version", sorted(NEIGHBOURS))
def test_outcomes_on_neighbouring_releases(fork: Path, release_tree, tmp_path: Path, version: str) -> None:
    capture(fork, "verl==0.6.1", tmp_path / "mine")
    other = release_tree(version)
    code, out = run("apply", "--target", str(other), "--patchset", str(tmp_path / "mine"), "--json")
    assert code == 0, out
    got = {r["patch"]: r["status"] for r in json.loads(out)["results"] if r["patch"] in NEIGHBOURS[version]}
    assert got == NEIGHBOURS[version]
    # where a structural patch applied, it sits where it belongs, not merely somewhere
    tree = ast.parse((other / GSM8K).read_text())
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert names.index("normalize_answer") == names.index("extract_solution") - 1
    compute = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "compute_score")
    assert any(isinstance(d, ast.Constant) and d.value == "flexible" for d in compute.args.defaults)
    if got["tracking-log"] == "applied":
        log = ast.parse((other / TRACKING).read_text())
        cls = next(n for n in log.body if isinstance(n, ast.ClassDef) and n.name == "FileLogger")
        method = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "log")
        assert "time.time()" in ast.unparse(method.body[0])


def test_older_release_conflicts_instead_of_guessing(fork: Path, release_tree, tmp_path: Path) -> None:
    """0.4.1 has no _SOLUTION_CLIP_CHARS: the helper's anchor is gone, so the patch says conflict."""
    capture(fork, "verl==0.6.1", tmp_path / "mine")
    # the kind's own answer: with the base texts the 3-way fallback merges the new module-level
    # helper where the constant was (as git does), which tests/patchsets/test_threeway.py covers
    shutil.rmtree(tmp_path / "mine" / "bases")
    old = release_tree("0.4.1")
    code, out = run("apply", "--target", str(old), "--patchset", str(tmp_path / "mine"), "--json")
    assert code == 1
    results = {r["patch"]: r for r in json.loads(out)["results"]}
    assert results["gsm8k-module"]["status"] == "conflict"
    assert "_SOLUTION_CLIP_CHARS = 300" in results["gsm8k-module"]["reason"]
    assert git(old, "status", "--porcelain") == ""  # all-or-nothing: nothing was written
