"""Profiles: each one's command and environment, and the record's scripts they reproduce."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from standin import stand_in

from patchctl.clusters import Cluster, Host
from patchctl.errors import ManifestError, PatchctlError
from patchctl.target import open_tree
from patchctl.train import run
from patchctl.train.launcher import adapt_override, override_key
from patchctl.train.profiles import expand_env, load_profile, load_profiles

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "src/patchctl/patchsets/builtin/uky/files/examples/grpo_trainer"
SCRIPT_OF = {
    "debug": "run_qwen2_5_vl-3b_fake_dataset_DEBUG.sh",
    "fast-load": "run_qwen2_5_vl-3b_fake_dataset_FAST_LOAD.sh",
    "standard": "run_qwen2_5_vl-3b_fake_dataset.sh",
}
PATHS = {"DATA_DIR": "/data/fake", "MODEL_PATH": "/models/Qwen2.5-VL-3B-Instruct", "CHECKPOINT_DIR": "/ckpt"}


def cluster(paths: dict[str, str] = PATHS, env: dict[str, str] | None = None) -> Cluster:
    return Cluster(
        "c",
        (Host("node1", "/root/verl_Uky"),),
        "/root/verl_Uky",
        Path("patchctl.toml"),
        paths=dict(paths),
        env=env or {},
    )


def fake_tree(root: Path, ray_kwargs: bool) -> Path:
    """A stand-in of verl 0.6.1 (ray_init under ray_kwargs) or 0.5.0, with that release's real config."""
    return stand_in(root, "0.6.1" if ray_kwargs else "0.5.0")


def test_every_profile_loads() -> None:
    profiles = load_profiles()
    assert set(profiles) == {"smoke", "smoke-vllm", "debug", "fast-load", "standard"}
    assert profiles["smoke"].rollout == "hf" and profiles["smoke"].needs == ()
    assert {profiles[n].rollout for n in SCRIPT_OF} == {"vllm"}


def script_run(script: Path, tmp: Path) -> tuple[list[str], dict[str, str]]:
    """Run one of the record's scripts with a stand-in python3 that records the trainer's argv and env."""
    root = tmp / "tree"
    (root / "examples/grpo_trainer").mkdir(parents=True)
    (root / "examples/grpo_trainer" / script.name).write_bytes(script.read_bytes())
    (root / "git_ignore.py").write_text("")
    bindir = tmp / "bin"
    bindir.mkdir()
    dump = tmp / "argv.json"
    fake = bindir / "python3"
    shell = "".join(
        f"echo {k}={v}; " for k, v in {**PATHS, "VERL_ROOT": str(root), "LOG_DIR": str(tmp / "logs")}.items()
    )
    fake.write_text(f"""#!{sys.executable}
import json, os, sys
if sys.argv[1].endswith("git_ignore.py"):
    os.execvp("sh", ["sh", "-c", {shell!r}])
json.dump({{"argv": sys.argv[3:], "env": dict(os.environ)}}, open({str(dump)!r}, "w"))
""")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "SKIP_PATH_CHECKS": "1", "LD_LIBRARY_PATH": "/opt/x"}
    subprocess.run(
        ["bash", str(root / "examples/grpo_trainer" / script.name)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp,
    )
    doc = json.loads(dump.read_text())
    return doc["argv"], doc["env"]


@pytest.mark.parametrize("name", sorted(SCRIPT_OF))
def test_record_profiles_reproduce_the_scripts(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LD_LIBRARY_PATH", "/opt/x")
    if not (SCRIPTS / SCRIPT_OF[name]).is_file():
        pytest.skip("the uky scripts are not shipped in this checkout")
    argv, env = script_run(SCRIPTS / SCRIPT_OF[name], tmp_path)
    tree = open_tree(fake_tree(tmp_path / "verl", ray_kwargs=True))
    plan = run.plan(tree, load_profile(name), cluster(), [], "python3", tmp_path / "run")
    ours = [a for a in plan.launch.argv[3:] if not a.startswith("hydra.")]
    assert ours == argv
    for key, value in plan.launch.env.items():
        if key not in ("PYTHONPATH", "PYTHONUNBUFFERED"):
            assert env[key] == value, key
    assert plan.launch.env["LD_LIBRARY_PATH"] == "/usr/local/cuda/lib64/stubs:/opt/x"
    # every variable the script exports with the record's tag is in the profile
    tagged = {
        ln.split("=", 1)[0].split()[-1]
        for ln in (SCRIPTS / SCRIPT_OF[name]).read_text().splitlines()
        if ln.startswith("export ") and "# Uky" in ln
    }
    assert tagged - {"PYTHONPATH"} <= set(plan.launch.env)


def test_smoke_command_on_verl_05_and_06(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # with a cluster already named in RAY_ADDRESS patchctl starts no head and the driver asks for CPUs
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    smoke = load_profile("smoke")
    for ray_kwargs, key in ((False, "ray_init.num_cpus=8"), (True, "ray_kwargs.ray_init.num_cpus=8")):
        tree = open_tree(fake_tree(tmp_path / str(ray_kwargs), ray_kwargs))
        plan = run.plan(tree, smoke, None, ["trainer.total_training_steps=5", "+x.y=1"], "py", tmp_path / "r")
        argv = list(plan.launch.argv)
        assert argv[:3] == ["py", "-m", "verl.trainer.main_ppo"]
        assert key in argv
        assert "actor_rollout_ref.rollout.name=hf" in argv
        assert f"actor_rollout_ref.model.path={tmp_path / 'r' / 'assets' / 'model'}" in argv
        # the user's override replaces the profile's for the same key, and comes last
        assert [a for a in argv if a.startswith("trainer.total_training_steps=")] == ["trainer.total_training_steps=5"]
        assert argv[-2:] == ["trainer.total_training_steps=5", "+x.y=1"]
        assert plan.launch.cwd == tree.root
        assert plan.launch.env["PYTHONPATH"].split(os.pathsep)[0] == str(tree.root)
        assert plan.launch.env["VERL_ATTN_IMPLEMENTATION"] == "eager"
        assert plan.launch.env["HF_HUB_OFFLINE"] == "1"
        assert plan.head is None


def test_smoke_starts_a_ray_head(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    tree = open_tree(fake_tree(tmp_path / "t", False))
    plan = run.plan(tree, load_profile("smoke"), None, [], "py", tmp_path / "r")
    assert plan.head is not None
    assert plan.head.argv[:2] == ("py", "-c") and "--head" in plan.head.argv and "--num-cpus=8" in plan.head.argv
    assert plan.launch.env["RAY_ADDRESS"] == plan.head.address and plan.head.address.startswith("127.0.0.1:")
    # the driver connects, so it must not ask for CPUs: the profile's num_cpus=8 is replaced
    assert [a for a in plan.launch.argv if a.startswith("ray_init.")] == ["ray_init.num_cpus=null"]


def test_cluster_profiles_need_paths(tmp_path: Path) -> None:
    tree = open_tree(fake_tree(tmp_path / "t", True))
    with pytest.raises(PatchctlError, match=r"profile debug needs MODEL_PATH, DATA_DIR; set them in \[clusters"):
        run.plan(tree, load_profile("debug"), None, [], "python3")
    plan = run.plan(
        tree,
        load_profile("debug"),
        cluster({"DATA_DIR": "/d", "MODEL_PATH": "/m"}, {"EXTRA": "1"}),
        [],
        "python3",
        tmp_path / "run",
    )
    assert (
        f"trainer.default_local_dir={tmp_path / 'run'}/checkpoints/qwen2_5_vl_3b_fake_dataset_debug" in plan.launch.argv
    )
    assert plan.launch.env["EXTRA"] == "1"
    with pytest.raises(PatchctlError, match="override 'oops': no '=' after the key; write KEY=VALUE"):
        run.plan(tree, load_profile("smoke"), None, ["oops"], "python3")


def test_env_expansion() -> None:
    assert expand_env("/stubs:$LD_LIBRARY_PATH", {"LD_LIBRARY_PATH": "/a"}) == "/stubs:/a"
    assert expand_env("/stubs:${LD_LIBRARY_PATH}", {}) == "/stubs"
    assert expand_env("plain", {}) == "plain"
    assert override_key("+a.b=1") == "a.b" and adapt_override("ray_init.x=1", True) == "ray_kwargs.ray_init.x=1"


def test_bad_profiles_file(tmp_path: Path) -> None:
    bad = tmp_path / "p.toml"
    bad.write_text('[profile.x]\ndescription = "d"\nrollout = "hf"\nassets = "smoke"\noverrides = []\ncolour = 1\n')
    with pytest.raises(ManifestError, match=r"key 'profile.x.colour': unknown key"):
        load_profiles(bad)
    bad.write_text(
        '[profile.x]\ndescription = "d"\nrollout = "hf"\nassets = "smoke"\noverrides = ["a=1"]\n'
        '[profile.x.gates]\nlearning_min_gain = "0.3"\n'
    )
    with pytest.raises(ManifestError, match="learning_min_gain"):
        load_profiles(bad)
    bad.write_text('[profile.x]\ndescription = "d"\nrollout = "tpu"\nassets = "smoke"\noverrides = []\n')
    with pytest.raises(ManifestError, match="'tpu' is not allowed"):
        load_profiles(bad)
    with pytest.raises(
        PatchctlError, match="no such profile; choose one of: debug, fast-load, smoke, smoke-vllm, standard"
    ):
        load_profile("nope")


def test_smoke_overrides_compose_with_verl_050(release_tree: Callable[[str], Path], tmp_path: Path) -> None:
    """Hydra composes verl 0.5.0's real config with the smoke profile's overrides (where hydra is installed)."""
    pytest.importorskip("hydra")
    from hydra import compose, initialize_config_dir

    tree = open_tree(release_tree("0.5.0"))
    plan = run.plan(tree, load_profile("smoke"), None, [], "python3", tmp_path / "run")
    overrides = [a for a in plan.launch.argv[3:] if not a.startswith("hydra.")]
    with initialize_config_dir(config_dir=str(tree.root / "verl/trainer/config"), version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=overrides)
    assert cfg.actor_rollout_ref.rollout.name == "hf"
    assert cfg.ray_init.num_cpus is None  # patchctl's own Ray head has the CPUs
    assert cfg.trainer.total_training_steps == 40
