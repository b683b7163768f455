"""``--repo`` carries a fork's edits along upstream's history (issue 38 req 4), on a real git repo
whose commits rename a file, move a function to a new module and remove one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.drift.helpers import Repo, git, invoke
from tests.patchsets.history.upstream_repo import build, captured, checkout

from patchctl.patchsets.history.upstream import Upstream
from patchctl.patchsets.history.walk import walk


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("history")
    shas = build(tmp / "up")
    return tmp / "up", captured(tmp / "up", tmp), shas


def _apply(
    world: tuple[Path, Path, dict[str, str]], tmp: Path, *extra: str, ps: Path | None = None
) -> dict[str, dict[str, str]]:
    up, ps, _ = world[0], ps or world[1], None
    target = checkout(up, "v0.2.0", tmp / "target")
    done = invoke("apply", "--target", str(target), "--patchset", str(ps), "--json", *extra)
    assert done.exit_code == 0, done.output
    return {r["patch"]: r for r in json.loads(done.output)["results"]}


def test_an_edit_in_a_renamed_file_lands_in_the_new_file(world, tmp_path: Path) -> None:
    up, _, shas = world
    got = _apply(world, tmp_path, "--repo", str(up))["ppo-fit"]
    assert got["status"] == "applied"
    assert got["path"] == "verl/trainer/ppo_trainer.py"
    assert f"verl/trainer/ppo.py renamed to verl/trainer/ppo_trainer.py in {shas['rename'][:12]}" in got["reason"]
    text = (tmp_path / "target" / "verl/trainer/ppo_trainer.py").read_text()
    # upstream's own later change to the loop is kept, and the edit sits inside it
    assert (
        "        for batch in self.loader(epoch=0):\n            loss = self.update(batch)\n"
        '            print("loss", loss)  # Uky: log every step\n            self.step += 1\n'
        "        return self.step  # done\n"
    ) in text


def test_an_edit_in_a_function_moved_to_another_module_follows_it(world, tmp_path: Path) -> None:
    up, _, shas = world
    got = _apply(world, tmp_path, "--repo", str(up))["metrics-reduce-metrics"]
    assert got["status"] == "applied"
    assert got["path"] == "verl/utils/reduce.py"
    assert f"reduce_metrics moved to verl/utils/reduce.py:reduce_metrics in {shas['move'][:12]}" in got["reason"]
    text = (tmp_path / "target" / "verl/utils/reduce.py").read_text()
    assert text.startswith('"""Reducing metrics over a step."""')
    assert "        out[key] = max(values)  # Uky: the peak, not the mean\n" in text
    assert "sum(values)" not in text
    assert "Uky" not in (tmp_path / "target" / "verl/utils/metrics.py").read_text()


def test_an_edit_whose_function_upstream_removed_names_the_commit_and_where_the_code_went(
    world, tmp_path: Path
) -> None:
    up, _, shas = world
    got = _apply(world, tmp_path, "--repo", str(up))["metrics-legacy-timer"]
    assert got["status"] == "not-applicable"
    assert got["reason"] == (
        f"upstream removed legacy_timer (verl/utils/metrics.py) in commit "
        f'{shas["remove"][:12]} "Drop the legacy timer (#104)", PR #104; '
        "the code went to verl/utils/profiling.py:Timer.timed"
    )


def test_a_bare_mirror_is_read_and_never_written(world, tmp_path: Path) -> None:
    up, _, _ = world
    mirror = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--mirror", str(up), str(mirror))
    before = git(mirror, "for-each-ref")
    listing = sorted(p.relative_to(mirror) for p in mirror.rglob("*"))
    got = _apply(world, tmp_path, "--repo", str(mirror))
    assert [r["status"] for r in got.values()] == ["applied", "applied", "not-applicable"]
    assert git(mirror, "for-each-ref") == before
    assert sorted(p.relative_to(mirror) for p in mirror.rglob("*")) == listing


def test_matrix_and_drift_carry_the_same_way(world) -> None:
    up, ps, _ = world
    done = invoke("matrix", "--repo", str(up), "--versions", "v0.1.0,v0.2.0", "--patchset", str(ps), "--json")
    assert done.exit_code == 0, done.output
    cells = {(c["patch"], c["version"]): c for c in json.loads(done.output)["cells"]}
    assert cells[("ppo-fit", "v0.2.0")]["path"] == "verl/trainer/ppo_trainer.py"
    assert cells[("metrics-reduce-metrics", "v0.2.0")]["status"] == "applied"
    assert cells[("metrics-legacy-timer", "v0.2.0")]["reason"].startswith(
        "upstream removed legacy_timer (verl/utils/metrics.py) in commit"
    )
    plain = invoke("matrix", "--repo", str(up), "--no-history", "--versions", "v0.2.0", "--patchset", str(ps), "--json")
    assert {c["status"] for c in json.loads(plain.output)["cells"]} == {"not-applicable"}
    drift = invoke("drift", "--repo", str(up), "--from", "v0.1.0", "--to", "v0.2.0", "--patchset", str(ps), "--json")
    outcomes = {p["patch"]: p["outcome"]["to"]["status"] for p in json.loads(drift.output)["patches"]}
    assert outcomes == {
        "ppo-fit": "applied",
        "metrics-reduce-metrics": "applied",
        "metrics-legacy-timer": "not-applicable",
    }


def test_a_target_that_is_no_commit_of_the_repo_is_one_line_exit_2(world, tmp_path: Path) -> None:
    up, ps, _ = world
    target = checkout(up, "v0.2.0", tmp_path / "target")
    (target / "verl/version/version").write_text("9.9.9\n")
    git(target, "commit", "-qam", "local")
    done = invoke("apply", "--target", str(target), "--patchset", str(ps), "--repo", str(up))
    assert done.exit_code == 2
    assert done.output.strip().splitlines()[-1] == (
        f"error: --repo {up.resolve()}: the target {target} is no commit of it, nor is there a tag v9.9.9; "
        "pass the verl clone the target was checked out from (fetched up to it), or leave out --repo"
    )


def _against(ps: Path, said: str) -> str:
    """The patchset's text with every ``captured_against`` saying ``said`` (capture names a ref base
    by its commit, date and nearest tag: the rewrite must not depend on that wording)."""
    text, n = re.subn(
        r'^captured_against = ".*"$',
        f"captured_against = {json.dumps(said)}",
        (ps / "patchset.toml").read_text(),
        flags=re.M,
    )
    assert n >= 1, "the patchset names no captured_against to rewrite"
    return text


def test_a_base_named_by_commit_id_is_found(world, tmp_path: Path) -> None:
    """capture names a directory BASE by its commit ("DIR at commit 0123456789ab"): that commit is the base."""
    up, ps, shas = world
    copy = tmp_path / "ps"
    copy.mkdir()
    said = f"/somewhere/verl at commit {shas['base'][:12]}"
    (copy / "patchset.toml").write_text(_against(ps, said))
    got = _apply(world, tmp_path, "--repo", str(up), ps=copy)
    assert got["ppo-fit"]["status"] == "applied"
    unknown = tmp_path / "ps2"
    unknown.mkdir()
    (unknown / "patchset.toml").write_text(_against(ps, "-c"))
    got = _apply(world, tmp_path / "again", "--repo", str(up), ps=unknown)
    assert got["ppo-fit"]["status"] == "not-applicable"
    assert got["ppo-fit"]["reason"].endswith(f"its captured_against (-c) names no commit of {up.resolve()}")


def test_an_upstream_rewrite_of_the_lines_under_an_edit_is_a_conflict_naming_its_commit(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "up")
    repo.commit(
        {"verl/count.py": "def count(items):\n    total = len(items)\n    return total\n"}, "count", tag="v0.1.0"
    )
    repo.filler(5)
    rewrite = repo.commit(
        {"verl/count.py": "def count(items):\n    total = sum(1 for _ in items)\n    return total\n"},
        "count: accept generators (#105)",
    )
    repo.filler(5, "more")
    repo.commit({"verl/version/version": "0.2.0\n"}, "Release 0.2.0", tag="v0.2.0")
    fork = checkout(repo.root, "v0.1.0", tmp_path / "fork")
    (fork / "verl/count.py").write_text(
        "def count(items):\n    total = len(list(items))  # Uky: sized\n    return total\n"
    )
    ps = tmp_path / "ps"
    assert invoke("capture", "--from", str(fork), "--base", "v0.1.0", "--out", str(ps)).exit_code == 0
    target = checkout(repo.root, "v0.2.0", tmp_path / "target")
    done = invoke("apply", "--target", str(target), "--patchset", str(ps), "--repo", str(repo.root), "--json")
    assert done.exit_code == 1
    (r,) = json.loads(done.output)["results"]
    assert r["status"] == "conflict"
    assert r["reason"].endswith(
        f'along upstream history it stops at commit {rewrite[:12]} "count: accept generators (#105)", PR #105: '
        "it rewrote the lines under the edit (verl/count.py:2)"
    )


def test_verify_and_revert_with_repo_find_the_carried_patches(world, tmp_path: Path) -> None:
    up, ps, _ = world
    _apply(world, tmp_path, "--repo", str(up))
    target = tmp_path / "target"
    plain = invoke("verify", "--target", str(target), "--patchset", str(ps))
    assert plain.exit_code == 1  # without the clone, the carried patches are not where the manifest says
    checked = invoke("verify", "--target", str(target), "--patchset", str(ps), "--repo", str(up), "--json")
    assert checked.exit_code == 0, checked.output
    assert {c["patch"]: c["status"] for c in json.loads(checked.output)["patches"]} == {
        "ppo-fit": "present",
        "metrics-reduce-metrics": "present",
        "metrics-legacy-timer": "not-applicable",
    }
    done = invoke("revert", "--target", str(target), "--patchset", str(ps), "--repo", str(up))
    assert done.exit_code == 0, done.output
    assert git(target, "status", "--porcelain") == ""


def test_two_edits_of_one_file_walk_the_same_commits_each_with_its_own_text(world) -> None:
    """The walk's cache is per commit range and state: a second edit over the same commits gets its own merge."""
    up, _, shas = world
    with Upstream(up) as history:
        base = history.read(shas["base"], "verl/trainer/ppo.py")
        assert base is not None
        one = base.replace("        self.step = 0\n", "        self.step = 0  # Uky: one\n")
        two = base.replace("        self.model.save(path)\n", "        self.model.save(path)  # Uky: two\n")
        got = [walk(history, shas["base"], shas["target"], "verl/trainer/ppo.py", base, p) for p in (one, two)]
    assert [c.status for c in got] == ["placed", "placed"]
    assert [c.state.path for c in got] == ["verl/trainer/ppo_trainer.py"] * 2
    assert "# Uky: one" in got[0].state.patched and "# Uky: two" not in got[0].state.patched
    assert "# Uky: two" in got[1].state.patched and "# Uky: one" not in got[1].state.patched
    assert "for batch in self.loader(epoch=0):" in got[1].state.patched


def test_a_removed_function_is_not_followed_into_a_lookalike_that_was_already_there(tmp_path: Path) -> None:
    """Under another name, only a def new to its file can be the edit's moved one: an older copy
    that upstream kept is another function, however alike."""
    body = "    total = 0\n    for x in items:\n        total += x * x\n    return total\n"
    repo = Repo(tmp_path / "up")
    repo.commit({"verl/loss.py": f"def old_loss(items):\n{body}\n\ndef new_loss(items):\n{body}"}, "loss", tag="v0.1.0")
    repo.filler(3)
    drop = repo.commit({"verl/loss.py": f"def new_loss(items):\n{body}"}, "loss: drop old_loss (#107)")
    repo.commit({"verl/version/version": "0.2.0\n"}, "Release 0.2.0", tag="v0.2.0")
    fork = checkout(repo.root, "v0.1.0", tmp_path / "fork")
    edited = f"def old_loss(items):\n{body.replace('x * x', 'abs(x)  # Uky: l1')}\n\ndef new_loss(items):\n{body}"
    (fork / "verl/loss.py").write_text(edited)
    ps = tmp_path / "ps"
    assert invoke("capture", "--from", str(fork), "--base", "v0.1.0", "--out", str(ps)).exit_code == 0
    target = checkout(repo.root, "v0.2.0", tmp_path / "target")
    done = invoke("apply", "--target", str(target), "--patchset", str(ps), "--repo", str(repo.root), "--json")
    (r,) = json.loads(done.output)["results"]
    assert r["status"] == "not-applicable", r
    assert r["reason"].startswith(
        f'upstream removed old_loss (verl/loss.py) in commit {drop[:12]} "loss: drop old_loss'
    )
    assert "Uky" not in (target / "verl/loss.py").read_text()
