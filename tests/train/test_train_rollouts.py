"""The rollouts a tree has, read from the real verl releases, and the refusal before launch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchctl.cli.main import cli
from patchctl.target import open_tree
from patchctl.train import rollouts, run
from patchctl.train.profiles import load_profiles
from patchctl.train.rollouts import RolloutMissing

HAVE = {
    "0.4.1": ("hf", "sglang_async", "vllm"),
    "0.5.0": ("hf", "sglang", "vllm"),
    "0.6.0": ("sglang", "vllm"),
    "0.6.1": ("sglang", "vllm"),
    "0.7.0": ("sglang", "vllm"),
    "0.9.1": ("sglang", "trtllm", "vllm"),
}


def release(version: str) -> Path:
    from patchctl import releases

    return releases.materialize(version)


@pytest.mark.parametrize("version", sorted(HAVE))
def test_available_on_the_releases(version: str, release_cache: Path) -> None:
    """0.6.0 keeps hf_rollout.py but dropped "hf" from its registry: the registry decides."""
    root = release(version)
    assert rollouts.available(root) == HAVE[version]
    assert (root / "verl/workers/rollout/hf_rollout.py").is_file()


def test_a_registry_entry_whose_module_is_gone_does_not_count(tmp_path: Path) -> None:
    base = tmp_path / "verl/workers/rollout"
    base.mkdir(parents=True)
    (base / "base.py").write_text(
        '_ROLLOUT_REGISTRY = {("vllm", "async"): "verl.workers.rollout.vllm_rollout.X",\n'
        '    ("hf", "sync"): "verl.workers.rollout.hf_rollout.HFRollout"}\n'
    )
    (base / "vllm_rollout").mkdir()
    (base / "vllm_rollout/__init__.py").write_text("")
    assert rollouts.available(tmp_path) == ("vllm",)
    (base / "hf_rollout.py").write_text("")
    assert rollouts.available(tmp_path) == ("hf", "vllm")


def test_a_tree_without_either_is_not_judged(tmp_path: Path) -> None:
    assert rollouts.available(tmp_path) is None


def test_chosen_takes_the_last_override() -> None:
    argv = ["python", "-m", "x", "actor_rollout_ref.rollout.name=hf", "a=1", "actor_rollout_ref.rollout.name=vllm"]
    assert rollouts.chosen(argv, "hf") == "vllm"
    assert rollouts.chosen(["a=1"], "hf") == "hf"


def test_plan_refuses_smoke_on_0_9_1_and_plans_smoke_vllm(release_cache: Path, tmp_path: Path) -> None:
    tree = open_tree(release("0.9.1"))
    profiles = load_profiles()
    with pytest.raises(RolloutMissing) as caught:
        run.plan(tree, profiles["smoke"], None, [], "python3", tmp_path / "r")
    assert str(caught.value) == (
        f"profile smoke rolls out with hf, which verl 0.9.1 at {tree.root} does not have "
        "(its rollouts: sglang, trtllm, vllm); use --profile smoke-vllm"
    )
    # the user's override of the rollout is what runs, so it is what is checked
    run.plan(tree, profiles["smoke"], None, ["actor_rollout_ref.rollout.name=vllm"], "python3", tmp_path / "r")
    plan = run.plan(tree, profiles["smoke-vllm"], None, [], "python3", tmp_path / "r")
    argv = plan.launch.argv
    # the speed settings the GPU helper measured, and the one-reward-worker adaptation of verl 0.9
    for setting in (
        "actor_rollout_ref.rollout.enforce_eager=True",
        "actor_rollout_ref.rollout.agent.num_workers=1",
        "reward.num_workers=1",
        "actor_rollout_ref.actor.use_torch_compile=False",
        "actor_rollout_ref.rollout.calculate_log_probs=True",
    ):
        assert setting in argv
    # a key verl 0.9.1 lacks is refused by the tree's config before launch
    from patchctl.train.treeconfig import UnknownKey

    with pytest.raises(UnknownKey, match=r"verl 0.9.1 has no key actor_rollout_ref.rollout.agent.num_worker"):
        run.plan(
            tree,
            profiles["smoke-vllm"],
            None,
            ["actor_rollout_ref.rollout.agent.num_worker=1"],
            "python3",
            tmp_path / "r",
        )


def test_cli_refuses_in_one_line_before_launch(release_cache: Path, tmp_path: Path) -> None:
    """The dry run already refuses: nothing is launched, one line, exit 1."""
    root = release("0.6.1")
    done = CliRunner().invoke(
        cli, ["train", "--target", str(root), "--profile", "smoke", "--dry-run", "--out", str(tmp_path / "r")]
    )
    assert done.exit_code == 2
    lines = [ln for ln in done.output.splitlines() if ln.strip()]
    assert lines == [
        (
            f"error: profile smoke rolls out with hf, which verl 0.6.1 at {root} does not have "
            "(its rollouts: sglang, vllm); use --profile smoke-vllm"
        )
    ]
    assert not (tmp_path / "r").exists()
    ok = CliRunner().invoke(
        cli,
        [
            "train",
            "--target",
            str(root),
            "--profile",
            "smoke-vllm",
            "--dry-run",
            "--json",
            "--out",
            str(tmp_path / "r"),
        ],
    )
    assert ok.exit_code == 0, ok.output
    assert "actor_rollout_ref.rollout.name=vllm" in json.loads(ok.output)["command"]


def test_validate_preflight_row_refuses_before_ray(release_cache: Path) -> None:
    """validate's host preflight: a failing row (so validate stops before Ray) naming the fix."""
    row = rollouts.preflight_row(release("0.9.1"), "smoke")
    assert row == {
        "check": "rollout",
        "status": "fail",
        "value": "profile smoke rolls out with hf, which this tree does not have (its rollouts: sglang, trtllm, vllm)",
        "fix": "use --profile smoke-vllm",
    }
    assert rollouts.preflight_row(release("0.9.1"), "smoke-vllm")["status"] == "pass"
    assert rollouts.preflight_row(release("0.5.0"), "smoke")["value"] == "hf (the tree has: hf, sglang, vllm)"


def test_validate_preflight_row_on_a_tree_it_cannot_read(tmp_path: Path) -> None:
    row = rollouts.preflight_row(tmp_path, "smoke")
    assert row["status"] == "pass" and "cannot be told" in row["value"]


def test_smoke_vllm_run_builds_its_byte_level_assets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end through click with the stand-in trainer (a verl 0.6.1 tree): the smoke-bytes
    assets are built by the trainer's interpreter, with the per-character reward."""
    pytest.importorskip("tokenizers")
    pytest.importorskip("pyarrow")
    from standin import FIXTURE, stand_in

    monkeypatch.setenv("FAKE_LOG", str(FIXTURE))
    monkeypatch.setenv("FAKE_ARGV", str(tmp_path / "argv.txt"))
    monkeypatch.setenv("FAKE_STEPS", "30")
    tree = stand_in(tmp_path / "verl-0.6.1", "0.6.1")
    run_dir = tmp_path / "run"
    done = CliRunner().invoke(
        cli, ["train", "--target", str(tree), "--profile", "smoke-vllm", "--out", str(run_dir), "--json"]
    )
    doc = json.loads(run_dir.joinpath("report.json").read_text())
    assert doc["rollout"] == "vllm" and doc["total_steps"] == 30, done.output
    argv = (tmp_path / "argv.txt").read_text()
    assert "custom_reward_function.name=compute_char_score" in argv
    tok = json.loads((run_dir / "assets/model/tokenizer_config.json").read_text())
    assert tok["tokenizer_class"] == "Qwen2Tokenizer"
    assert {g["name"] for g in doc["gates"]} >= {"rollout-agrees", "update-applied", "weights-synced", "learning"}
