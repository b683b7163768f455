"""`patchctl matrix` on the five verl source releases: the expected outcome table, nothing written."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from tests.conftest import RELEASES, git, snapshot
from tests.matrix.matrix_helpers import invoke, listing
from tests.patchsets.test_releases_table import EXPECTED

from patchctl import releases
from patchctl.patchsets.loader import load_patchsets


@pytest.fixture
def scratch_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temp directory the matrix makes its scratch copies in, so a test can see it emptied."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def test_matrix_of_the_five_releases(release_cache: Path, scratch_root: Path) -> None:
    trees = {v: releases.materialize(v) for v in RELEASES}
    before = {v: snapshot(t) for v, t in trees.items()}
    cache_before = {d: listing(release_cache / d) for d in ("releases", "trees")}

    result = invoke("matrix", "--versions", ",".join(RELEASES), "--json")

    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [c["label"] for c in doc["versions"]] == list(RELEASES)
    assert [c["version"] for c in doc["versions"]] == list(RELEASES)
    assert all(c["kind"] == "release" and c["written"] > 0 for c in doc["versions"])
    cells = {(c["patch"], c["version"]): c["status"] for c in doc["cells"]}
    for patch, row in EXPECTED.items():
        assert {v: cells[patch, v] for v in RELEASES} == row
    uky = load_patchsets(["uky"])[0]
    assert [p["patch"] for p in doc["patches"]] == [p.id for p in uky.patches]
    assert len(doc["cells"]) == len(uky.patches) * len(RELEASES)
    assert all(c["reason"] for c in doc["cells"])
    assert doc["first_superseded"] == {
        p.id: "0.7.0" if p.id == "vllm-enable-log-requests" else None for p in uky.patches
    }
    assert doc["problems"] == {p.id: [] for p in uky.patches}
    assert doc["ok"] is True

    # nothing outside the scratch copies was written, and those are gone
    assert {d: listing(release_cache / d) for d in ("releases", "trees")} == cache_before
    for version, tree in trees.items():
        assert snapshot(tree) == before[version]
        assert git(tree, "status", "--porcelain") == ""
    assert list(scratch_root.iterdir()) == []


def test_table_names_first_superseded_version(release_cache: Path) -> None:
    result = invoke("matrix", "--versions", "0.6.1,verl==0.7.0")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = next(ln for ln in lines if "patch" in ln and "0.6.1" in ln)
    assert [c.strip() for c in header.split("┃")[1:-1]] == [
        "patch",
        "0.6.1",
        "0.7.0",
        "superseded from",
        "conflict/ambiguous",
    ]
    row = next(ln for ln in lines if "vllm-enable-log-requests" in ln)
    assert [c.strip() for c in row.split("│")[1:-1]] == [
        "vllm-enable-log-requests",
        "applied",
        "superseded-upstream",
        "0.7.0",
        "-",
    ]
    assert lines[-1] == "matrix: no conflict or ambiguous cell"


def test_markdown_table(release_cache: Path) -> None:
    result = invoke("matrix", "--versions", "0.5.0,0.7.0", "--markdown", "--jobs", "1")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:4] == [
        "| patch | 0.5.0 | 0.7.0 | superseded from | conflict/ambiguous |",
        "|---|---|---|---|---|",
        "| vllm-enable-log-requests | not-applicable | superseded-upstream | 0.7.0 | - |",
        "| triton-cuda-stubs | applied | applied | - | - |",
    ]


def test_starts_from_the_release_not_the_cached_tree(
    release_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's `apply --target verl==0.6.1` patches the cached tree in place; matrix must not see it."""
    private = tmp_path / "cache"
    (private / "releases").mkdir(parents=True)
    shutil.copy2(releases.sdist("0.6.1"), private / "releases")
    monkeypatch.setenv("PATCHCTL_CACHE", str(private))
    applied = invoke("apply", "--target", "verl==0.6.1", "--json")
    assert applied.exit_code == 0, applied.output
    patched = snapshot(private / "trees" / "verl-0.6.1")

    result = invoke("matrix", "--versions", "0.6.1", "--json")

    assert result.exit_code == 0, result.output
    statuses = {c["patch"]: c["status"] for c in json.loads(result.stdout)["cells"]}
    assert statuses["vllm-enable-log-requests"] == "applied"
    assert statuses["triton-cuda-stubs"] == "applied"
    assert snapshot(private / "trees" / "verl-0.6.1") == patched
