"""bisect on small repositories built here: linear history, release branches, merges, skips."""

from __future__ import annotations

import json
from pathlib import Path

from tests.drift.helpers import NEW, OLD, SERVER, Repo, git, invoke, patchset


def run(repo: Repo, ps: Path, good: str, bad: str, *extra: str):
    return invoke(
        "bisect", "log-requests", "--good", good, "--bad", bad, "--repo", str(repo.root), "--patchset", str(ps), *extra
    )


def test_linear_history_finds_the_commit_in_log_n_probes(tmp_path: Path) -> None:
    repo, ps = Repo(tmp_path / "r"), patchset(tmp_path / "ps")
    git(repo.root, "tag", "good")
    repo.filler(40, "a")
    culprit = repo.commit({SERVER: NEW}, "upstream passes enable_log_requests")
    repo.filler(40, "b")
    git(repo.root, "tag", "bad")
    out = run(repo, ps, "good", "bad", "--json")
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["first"]["commit"] == culprit
    assert doc["first"]["subject"] == "upstream passes enable_log_requests"
    assert doc["before"]["status"] == "applied" and doc["after"]["status"] == "superseded-upstream"
    assert "passes enable_log_requests=" in doc["after"]["reason"]
    assert doc["span"] == 81 and doc["probes"] <= 2 + 8  # both ends, then log2(81) rounded up


def test_good_on_a_release_branch_is_searched_from_the_merge_base(tmp_path: Path) -> None:
    repo, ps = Repo(tmp_path / "r"), patchset(tmp_path / "ps")
    repo.filler(3, "main")
    git(repo.root, "checkout", "-q", "-b", "release/v0.1")
    repo.commit({"verl/version/version": "0.1.1\n"}, "bump to 0.1.1", tag="v0.1.1")
    git(repo.root, "checkout", "-q", "main")
    repo.filler(5, "x")
    culprit = repo.commit({SERVER: NEW}, "absorb the fix")
    repo.filler(5, "y")
    git(repo.root, "tag", "v0.2.0")
    out = run(repo, ps, "v0.1.1", "v0.2.0")
    assert out.exit_code == 0, out.output
    assert "v0.1.1 is not an ancestor of v0.2.0: searched from their merge base" in out.output
    assert f"first changed commit: {culprit}" in out.output
    assert "absorb the fix" in out.output


def test_a_merged_topic_branch_is_named_by_its_merge_commit(tmp_path: Path) -> None:
    repo, ps = Repo(tmp_path / "r"), patchset(tmp_path / "ps")
    git(repo.root, "tag", "good")
    git(repo.root, "checkout", "-q", "-b", "topic")
    repo.commit({"docs/t.md": "t\n"}, "topic start")
    repo.commit({SERVER: NEW}, "topic: the fix")
    git(repo.root, "checkout", "-q", "main")
    repo.filler(4, "m")
    git(repo.root, "merge", "-q", "--no-ff", "-m", "Merge topic", "topic")
    merge = git(repo.root, "rev-parse", "HEAD")
    repo.filler(4, "n")
    doc = json.loads(run(repo, ps, "good", "HEAD", "--json").output)
    assert doc["first"]["commit"] == merge
    assert doc["span"] == 9  # the topic's own commits are not on the first-parent line


def test_an_unparsable_commit_is_skipped_and_said(tmp_path: Path) -> None:
    repo, ps = Repo(tmp_path / "r"), patchset(tmp_path / "ps")
    git(repo.root, "tag", "good")
    repo.filler(3)
    broken = repo.commit({SERVER: "def start(:\n"}, "wip: broken")  # where the first probe lands
    repo.commit({SERVER: OLD}, "back")
    repo.filler(1, "y")
    culprit = repo.commit({SERVER: NEW}, "the fix")
    repo.filler(1, "z")
    doc = json.loads(run(repo, ps, "good", "HEAD", "--json").output)
    assert doc["first"]["commit"] == culprit
    assert [p["commit"] for p in doc["skipped"]] == [broken]
    text = run(repo, ps, "good", "HEAD").output
    assert f"skipped {broken[:12]}: verl/server.py:1: not valid Python" in text
    assert f"first changed commit: {culprit}" in text


def test_skipped_commits_next_to_the_change_are_named_with_it(tmp_path: Path) -> None:
    repo, ps = Repo(tmp_path / "r"), patchset(tmp_path / "ps")
    git(repo.root, "tag", "good")
    repo.filler(2)
    broken = repo.commit({SERVER: "def start(:\n"}, "wip: broken")
    gone = repo.commit({SERVER: None}, "move it away for a while")
    culprit = repo.commit({SERVER: NEW}, "back, with the fix")
    repo.filler(1, "z")
    doc = json.loads(run(repo, ps, "good", "HEAD", "--json").output)
    assert doc["first"] is None
    assert [c["commit"] for c in doc["candidates"]] == [broken, gone, culprit]
    said = {p["commit"]: p["skipped"] for p in doc["skipped"]}
    assert "verl/server.py:1: not valid Python" in said[broken] and "none of its target files exists" in said[gone]
    text = run(repo, ps, "good", "HEAD").output
    assert f"skipped {broken[:12]}" in text and "the change is in one of these 3 commits" in text


def test_only_skipped_commits_left_are_all_named(tmp_path: Path) -> None:
    repo, ps = Repo(tmp_path / "r"), patchset(tmp_path / "ps")
    git(repo.root, "tag", "good")
    broken = repo.commit({SERVER: "def start(:\n"}, "broken")
    fixed = repo.commit({SERVER: NEW}, "fixed")
    doc = json.loads(run(repo, ps, "good", "HEAD", "--json").output)
    assert doc["first"] is None
    assert [c["commit"] for c in doc["candidates"]] == [broken, fixed]


def test_the_same_outcome_on_both_sides_is_refused(tmp_path: Path) -> None:
    repo, ps = Repo(tmp_path / "r"), patchset(tmp_path / "ps")
    git(repo.root, "tag", "good")
    repo.filler(2)
    out = run(repo, ps, "good", "HEAD")
    assert out.exit_code == 2
    assert "is applied at both --good good and --bad HEAD: nothing to bisect" in out.output


def test_a_merge_base_that_already_changed_is_refused(tmp_path: Path) -> None:
    repo, ps = Repo(tmp_path / "r"), patchset(tmp_path / "ps")
    repo.commit({SERVER: NEW}, "absorbed early")
    git(repo.root, "checkout", "-q", "-b", "release")
    repo.commit({SERVER: OLD}, "release branch reverts it", tag="rel")
    git(repo.root, "checkout", "-q", "main")
    repo.filler(2)
    out = run(repo, ps, "rel", "main")
    assert out.exit_code == 2
    assert "their merge base" in out.output and "is already superseded-upstream" in out.output


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    repo, ps = Repo(tmp_path / "r"), patchset(tmp_path / "ps")
    assert "no such commit, branch or tag" in run(repo, ps, "nope", "HEAD").output
    assert "cannot start with '-'" in run(repo, ps, "--upload-pack=x", "HEAD").output
    out = invoke("bisect", "other", "--good", "HEAD", "--bad", "HEAD", "--repo", str(repo.root), "--patchset", str(ps))
    assert out.exit_code == 2 and "no such patch" in out.output
    out = invoke("bisect", "log-requests", "--good", "a", "--bad", "b", "--repo", str(tmp_path), "--patchset", str(ps))
    assert out.exit_code == 2 and "not a git repository" in out.output


def test_a_patchset_naming_a_file_in_git_is_refused(tmp_path: Path) -> None:
    repo, ps = Repo(tmp_path / "r"), patchset(tmp_path / "ps")
    manifest = ps / "patchset.toml"
    manifest.write_text(
        manifest.read_text().replace('target = ["verl/server.py"]', 'target = ["verl/server.py", ".git/config"]')
    )
    git(repo.root, "tag", "good")
    repo.commit({SERVER: NEW}, "fix")
    out = run(repo, ps, "good", "HEAD")
    assert out.exit_code == 2 and ".git" in out.output


def test_good_and_bad_swapped_is_refused(tmp_path: Path) -> None:
    repo, ps = Repo(tmp_path / "r"), patchset(tmp_path / "ps")
    git(repo.root, "tag", "old")
    repo.commit({SERVER: NEW}, "fix")
    out = run(repo, ps, "HEAD", "old")
    assert out.exit_code == 2 and "is an ancestor of --good HEAD" in out.output and "swap" in out.output


SHIPPED = """
[[patch]]
id = "script"
title = "a script"
why = "ours"
kind = "add-file"
target = ["run.sh"]

[patch.params]
source = "files/run.sh"
existing = "keep"

[[patch]]
id = "script-env"
title = "its environment"
why = "ours"
kind = "shell-env"
target = ["run.sh"]

[patch.params]
before = "python3 -m verl"
env = ["OMP_NUM_THREADS=1"]
"""


def test_a_patch_on_a_file_an_earlier_patch_ships_is_probed_with_it(tmp_path: Path) -> None:
    repo, ps = Repo(tmp_path / "r"), patchset(tmp_path / "ps")
    (ps / "files").mkdir()
    (ps / "files" / "run.sh").write_text("python3 -m verl\n")
    (ps / "patchset.toml").write_text((ps / "patchset.toml").read_text() + SHIPPED)
    git(repo.root, "tag", "good")
    repo.filler(3)
    culprit = repo.commit({"run.sh": "export OMP_NUM_THREADS=1\npython3 -m verl\n"}, "upstream ships run.sh")
    out = invoke(
        "bisect",
        "script-env",
        "--good",
        "good",
        "--bad",
        "HEAD",
        "--repo",
        str(repo.root),
        "--patchset",
        str(ps),
        "--json",
    )
    doc = json.loads(out.output)
    assert doc["before"]["status"] == "applied", doc  # alone it would be not-applicable: no run.sh
    assert doc["first"]["commit"] == culprit
