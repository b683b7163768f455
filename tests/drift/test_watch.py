"""watch: quiet until a commit touches the code under a patch, then the first such commit."""

from __future__ import annotations

import json
from pathlib import Path

from tests.drift.helpers import NEW, OLD, SERVER, Repo, git, invoke, patchset

ENGINE = "verl/engine.py"
CALLEE = "class AsyncLLM:\n    def from_vllm_config(self, config, disable_log_requests=False):\n        pass\n"


def watch(repo: Repo, ps: Path, *extra: str):
    return invoke("watch", "--repo", str(repo.root), "--since", "v0.1.0", "--patchset", str(ps), *extra)


def setup(tmp_path: Path) -> tuple[Repo, Path]:
    repo, ps = Repo(tmp_path / "r"), patchset(tmp_path / "ps")
    repo.commit({ENGINE: CALLEE}, "engine", tag="v0.1.0")
    return repo, ps


def test_quiet_when_only_other_code_changed(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    repo.filler(5)
    repo.commit({"verl/other.py": "X = 2\n"}, "other")
    out = watch(repo, ps)
    assert out.exit_code == 0, out.output
    assert out.output == "watch: nothing changed under any patch in 6 commit(s) of main since v0.1.0\n"


def test_the_first_commit_touching_the_callee_is_reported(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    repo.filler(3)
    culprit = repo.commit({ENGINE: CALLEE.replace("=False", "=True")}, "flip the default")
    repo.filler(3, "later")
    out = watch(repo, ps)
    assert out.exit_code == 1
    assert f"First commit: `{culprit[:12]}`" in out.output and "flip the default" in out.output
    assert f"| log-requests | `{culprit[:12]}` flip the default | applied -> applied | - |" in out.output


def test_an_outcome_change_is_bisected(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    repo.filler(4)
    culprit = repo.commit({SERVER: NEW}, "absorb")
    repo.filler(4, "later")
    doc = json.loads(watch(repo, ps, "--json").output)
    p = doc["patches"][0]
    assert p["outcome"] == {
        "from": "applied",
        "to": "superseded-upstream",
        "first": {"commit": culprit, "date": p["outcome"]["first"]["date"], "subject": "absorb"},
    }
    assert doc["first"]["commit"] == culprit and doc["commits"] == 9


def test_a_release_branch_tag_is_watched_from_its_merge_base(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    git(repo.root, "tag", "-d", "v0.1.0")
    git(repo.root, "checkout", "-q", "-b", "release")
    repo.commit({"verl/version/version": "0.1.1\n"}, "0.1.1", tag="v0.1.0")
    git(repo.root, "checkout", "-q", "main")
    repo.filler(2)
    out = watch(repo, ps)
    assert out.exit_code == 0 and "in 2 commit(s)" in out.output
    fork = git(repo.root, "merge-base", "v0.1.0", "main")
    assert json.loads(watch(repo, ps, "--json").output)["base"] == fork  # not the tag's own commit


def test_a_skipped_patch_does_not_wake_the_job(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    repo.commit({SERVER: NEW}, "absorb")
    assert watch(repo, ps, "--skip", "log-requests").exit_code == 0
    out = watch(repo, ps, "--skip", "nope")
    assert out.exit_code == 2 and "patch 'nope': no such patch" in out.output


def test_a_manifest_path_is_no_pathspec_pattern(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    manifest = ps / "patchset.toml"
    manifest.write_text(
        manifest.read_text()
        .replace('target = ["verl/server.py"]', 'target = ["verl/serv*.py"]')
        .replace('call = "AsyncLLM.from_vllm_config"', 'call = "nothing.here"')
    )
    repo.commit({SERVER: NEW}, "touch server.py")
    out = watch(repo, ps)
    assert out.exit_code == 0, out.output


ADD_FILE = """
[patchset]
name = "t"
tag = "T"

[[patch]]
id = "tool"
title = "our tool"
why = "ours"
kind = "add-file"
target = ["verl/tools/our_tool.py"]

[patch.params]
source = "files/our_tool.py"
"""


def test_an_added_file_is_watched_by_its_folder_not_below_it(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    (ps / "patchset.toml").write_text(ADD_FILE)
    (ps / "files").mkdir()
    (ps / "files" / "our_tool.py").write_text("X = 1  # T\n")
    repo.commit({"verl/other.py": "X = 2\n"}, "beside the folder")
    repo.commit({"verl/tools/sub/deep.py": "X = 3\n"}, "below the folder")
    out = watch(repo, ps, "--json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["patches"][0]["paths"] == [":(glob)verl/tools/*"]
    culprit = repo.commit({"verl/tools/neighbour.py": "X = 4\n"}, "a neighbour in the folder")
    doc = json.loads(watch(repo, ps, "--json").output)
    assert doc["first"]["commit"] == culprit and doc["patches"][0]["outcome"]["first"] is None


def test_a_callee_defined_in_a_file_whose_name_holds_a_colon_is_watched(tmp_path: Path) -> None:
    repo, ps = Repo(tmp_path / "r"), patchset(tmp_path / "ps")
    repo.commit({"verl/odd:engine.py": CALLEE}, "engine", tag="v0.1.0")
    repo.filler(2)
    culprit = repo.commit({"verl/odd:engine.py": CALLEE.replace("=False", "=True")}, "flip the default")
    doc = json.loads(watch(repo, ps, "--json").output)
    assert ":(literal)verl/odd:engine.py" in doc["patches"][0]["paths"]
    assert doc["first"]["commit"] == culprit


def test_an_unjudgeable_end_is_reported_without_a_bisect(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    repo.commit({SERVER: "def start(:\n"}, "wip: broken")
    p = json.loads(watch(repo, ps, "--json").output)["patches"][0]
    assert p["outcome"]["from"] == "applied" and p["outcome"]["to"] == "unjudgeable"
    assert p["outcome"]["first"] is None and p["note"] == ""


def test_skipped_commits_that_hide_the_change_are_said_in_the_note(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    repo.commit({SERVER: "def start(:\n"}, "broken")
    repo.commit({SERVER: NEW}, "fixed")
    p = json.loads(watch(repo, ps, "--json").output)["patches"][0]
    assert p["outcome"]["first"] is None and p["note"] == "one of 2 commits (others skipped)"


def test_a_bisect_that_cannot_run_leaves_its_reason_in_the_note(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    repo.commit({SERVER: NEW}, "absorbed early")
    git(repo.root, "checkout", "-q", "-b", "release")
    repo.commit({SERVER: OLD}, "the release branch reverts it", tag="rel")
    git(repo.root, "checkout", "-q", "main")
    repo.filler(2)
    out = invoke("watch", "--repo", str(repo.root), "--since", "rel", "--patchset", str(ps), "--json")
    p = json.loads(out.output)["patches"][0]
    assert out.exit_code == 1 and p["outcome"]["first"] is None
    assert "their merge base" in p["note"] and "is already superseded-upstream" in p["note"]
