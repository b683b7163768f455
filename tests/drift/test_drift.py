"""drift between two refs of small repositories, and between two directories."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.drift.helpers import NEW, OLD, SERVER, Repo, git, invoke, patchset

ENGINE = "verl/engine.py"
CALLEE = """\
class AsyncLLM:
    @classmethod
    def from_vllm_config(cls, config, disable_log_requests=False, disable_log_stats=False):
        return cls()
"""
ADD_FILE = """
[[patch]]
id = "script"
title = "a script"
why = "ours"
kind = "add-file"
target = ["examples/run_ours.sh"]

[patch.params]
source = "files/run_ours.sh"
"""


def setup(tmp_path: Path) -> tuple[Repo, Path]:
    repo, ps = Repo(tmp_path / "r"), patchset(tmp_path / "ps")
    repo.commit({ENGINE: CALLEE, "examples/run_theirs.sh": "python3 -m verl.trainer\n"}, "engine", tag="a")
    (ps / "files").mkdir()
    (ps / "files" / "run_ours.sh").write_text("echo ours  # T\n")
    (ps / "patchset.toml").write_text((ps / "patchset.toml").read_text() + ADD_FILE)
    return repo, ps


def drift(repo: Repo, ps: Path, *extra: str):
    return invoke("drift", "--from", "a", "--to", "b", "--repo", str(repo.root), "--patchset", str(ps), *extra)


def patch_doc(out: str, pid: str) -> dict:
    return next(p for p in json.loads(out)["patches"] if p["patch"] == pid)


def test_nothing_under_a_patch_changed_exits_0(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    repo.commit({"docs/x.md": "unrelated\n", "verl/other.py": "X = 1\n"}, "unrelated", tag="b")
    out = drift(repo, ps)
    assert out.exit_code == 0, out.output
    assert "drift: nothing changed under any patch" in out.output


def test_a_changed_default_of_the_callee_is_flagged_though_the_patch_applies(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    repo.commit({ENGINE: CALLEE.replace("disable_log_stats=False", "disable_log_stats=True")}, "quieter", tag="b")
    out = drift(repo, ps, "--json")
    assert out.exit_code == 1, out.output
    doc = patch_doc(out.output, "log-requests")
    assert doc["outcome"]["from"]["status"] == doc["outcome"]["to"]["status"] == "applied"
    assert doc["flags"] == ["default changed: AsyncLLM.from_vllm_config(disable_log_stats=False -> True)"]
    callee = next(r for r in doc["regions"] if r["what"] == "callee")
    assert callee["status"] == "changed" and "+    def from_vllm_config" in callee["diff"]


def test_parameters_added_removed_and_renamed(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    new = CALLEE.replace(
        "disable_log_requests=False, disable_log_stats=False",
        "log_requests=False, disable_log_stats=False, *, trace=None",
    )
    repo.commit({ENGINE: new}, "rename", tag="b")
    flags = patch_doc(drift(repo, ps, "--json").output, "log-requests")["flags"]
    assert "parameter renamed: AsyncLLM.from_vllm_config(disable_log_requests -> log_requests)" in flags
    assert "parameter added: AsyncLLM.from_vllm_config(trace=None)" in flags
    repo.commit({ENGINE: CALLEE.replace(", disable_log_stats=False", "")}, "drop", tag="c")
    out = invoke("drift", "--from", "a", "--to", "c", "--repo", str(repo.root), "--patchset", str(ps), "--json")
    assert (
        "parameter removed: AsyncLLM.from_vllm_config(disable_log_stats)"
        in patch_doc(out.output, "log-requests")["flags"]
    )


def test_the_enclosing_function_changed_and_the_outcome_changed(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    repo.commit({SERVER: NEW}, "upstream takes the fix", tag="b")
    out = drift(repo, ps)
    assert out.exit_code == 1
    assert "outcome: applied -> superseded-upstream" in out.output
    assert "scope verl/server.py:start: changed" in out.output
    assert "+        enable_log_requests=engine_args.enable_log_requests," in out.output


def test_a_function_moved_to_another_file(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    repo.commit({SERVER: "from verl.serving import start\n", "verl/serving.py": OLD}, "move start", tag="b")
    doc = patch_doc(drift(repo, ps, "--json").output, "log-requests")
    assert "moved: start -> verl/serving.py:start" in doc["flags"]
    # with --repo the edit is carried along the move (issue 38 req 4), where it lands applied
    to = doc["outcome"]["to"]
    assert (to["status"], to["path"]) == ("applied", "verl/serving.py")
    assert "verl/server.py:start moved to verl/serving.py:start in " in to["reason"]


def test_a_renamed_file_is_flagged(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    git(repo.root, "mv", SERVER, "verl/async_server.py")
    repo.commit({}, "rename the server", tag="b")
    doc = patch_doc(drift(repo, ps, "--json").output, "log-requests")
    assert "file renamed: verl/server.py -> verl/async_server.py" in doc["flags"]
    # with --repo the edit follows the rename (issue 38 req 4): the outcome stays applied, in the new file
    assert doc["outcome"]["to"]["status"] == "applied"
    assert doc["outcome"]["to"]["path"] == "verl/async_server.py"


def test_files_beside_an_added_file(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    repo.commit({"examples/run_theirs.sh": "python3 -m verl.trainer.main\n", "examples/new.sh": "x\n"}, "ex", tag="b")
    doc = patch_doc(drift(repo, ps, "--json").output, "script")
    region = doc["regions"][0]
    assert region["what"] == "beside" and region["status"] == "changed"
    assert "added: examples/new.sh" in region["diff"] and "+python3 -m verl.trainer.main" in region["diff"]


def test_markdown_and_directories(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    repo.commit({SERVER: NEW}, "fix", tag="b")
    one, two = tmp_path / "one", tmp_path / "two"
    for ref, where in (("a", one), ("b", two)):
        git(repo.root, "worktree", "add", "-q", str(where), ref)
    out = invoke("drift", "--from", str(one), "--to", str(two), "--patchset", str(ps), "--markdown")
    assert out.exit_code == 1, out.output
    assert "| log-requests | applied | superseded-upstream |" in out.output
    assert "<details><summary>log-requests</summary>" in out.output and "```diff" in out.output


def test_bad_input(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    out = invoke("drift", "--from", "nope", "--to", "HEAD", "--patchset", str(ps))
    assert out.exit_code == 2 and "--from nope: not a release" in out.output
    assert (
        "--to nope: no such commit" in invoke("drift", "--from", "a", "--to", "nope", "--repo", str(repo.root)).output
    )
    assert "--json and --markdown" in invoke("drift", "--from", "a", "--to", "a", "--json", "--markdown").output


def test_a_tree_whose_folder_leads_outside_is_not_read_through(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    manifest = ps / "patchset.toml"
    manifest.write_text(
        manifest.read_text().replace('target = ["examples/run_ours.sh"]', 'target = ["examples/deep/run_ours.sh"]')
    )
    secret = tmp_path / "outside"
    (secret / "deep").mkdir(parents=True)
    (secret / "deep" / "key.sh").write_text("SECRET=1\n")
    one, two = tmp_path / "one", tmp_path / "two"
    git(repo.root, "worktree", "add", "-q", str(one), "a")
    git(repo.root, "worktree", "add", "-q", str(two), "a")
    shutil.rmtree(two / "examples")
    (two / "examples").symlink_to(secret)
    out = invoke("drift", "--from", str(one), "--to", str(two), "--patchset", str(ps), "--json")
    assert out.exit_code == 2 and "leads out of the tree through a symlink" in out.output
    assert "SECRET" not in out.output and "key.sh" not in out.output


TRAINER = "verl/trainer.py"
STRUCTURAL = """
[patchset]
name = "s"
tag = "T"

[[patch]]
id = "fit-log"
title = "log each step"
why = "ours"
kind = "structural"
target = ["verl/trainer.py"]

[patch.params]
scope = "Trainer.fit"
indent = "        "
above = ["self.step()"]
below = ["return epochs"]
after = "        print('step')  # T\\n"
"""
FIT = """\
class Trainer:
    def fit(self, epochs=10, lr=0.1):
        self.step()
        return epochs

    def step(self):
        pass
"""


def test_a_structural_patch_sees_its_scope_change_and_its_default_flagged(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    ps = tmp_path / "sps"
    ps.mkdir()
    (ps / "patchset.toml").write_text(STRUCTURAL)
    repo.commit({TRAINER: FIT}, "trainer", tag="a")
    repo.commit({TRAINER: FIT.replace("epochs=10", "epochs=3").replace("pass", "return 1")}, "fewer", tag="b")
    out = invoke("drift", "--from", "a", "--to", "b", "--repo", str(repo.root), "--patchset", str(ps), "--json")
    doc = patch_doc(out.output, "fit-log")
    assert doc["outcome"]["from"]["status"] == doc["outcome"]["to"]["status"] == "applied"
    scope = next(r for r in doc["regions"] if r["what"] == "scope")
    assert scope["name"] == "verl/trainer.py:Trainer.fit" and scope["status"] == "changed"
    assert doc["flags"] == ["default changed: Trainer.fit(epochs=10 -> 3)"]
    assert "Trainer.step" not in json.dumps(doc["regions"][1])  # the neighbour's change is not the scope's


def test_a_deleted_function_is_flagged(tmp_path: Path) -> None:
    repo, ps = setup(tmp_path)
    repo.commit({SERVER: "def stop():\n    pass\n"}, "start is gone", tag="b")
    doc = patch_doc(drift(repo, ps, "--json").output, "log-requests")
    assert "deleted: start (was in verl/server.py)" in doc["flags"]
    assert "outcome: applied -> not-applicable" in doc["flags"]


def test_escapes_in_upstream_code_are_shown_escaped_never_sent_to_the_terminal(tmp_path: Path) -> None:
    """Issue 41 req 6: a comment carrying OSC (set the window title) and erase-line sequences, and a
    file name with an escape, reach the diff; drift shows them as bisect and watch do (printable)."""
    repo, ps = setup(tmp_path)
    hostile = OLD.replace("    return", "    # \x1b]0;pwned\x07\x1b[2Kfine\tstill\n    return")
    # a CR would end the Python comment: it comes in a file name instead
    repo.commit({SERVER: hostile, "examples/\x1b[31mred\r.sh": "x\n"}, "hostile comment", tag="b")
    for extra in ((), ("--markdown",)):
        out = drift(repo, ps, *extra)
        assert out.exit_code == 1, out.output
        assert "\x1b" not in out.output and "\x07" not in out.output and "\r" not in out.output
        assert "+    # \\033]0;pwned\\a\\033[2Kfine\tstill" in out.output  # a tab stays, as git diff shows it
        assert "added: examples/\\033[31mred\\r.sh" in out.output
