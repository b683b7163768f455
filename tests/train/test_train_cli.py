"""`patchctl train` end to end through click, with a stand-in trainer in a stand-in verl tree.

The stand-in (``conftest.py``) prints what verl 0.5.0 printed on the GPU machine (lines of the
committed fixture) and carries verl 0.5.0's real config, so the launch, the streaming, the gates,
the report, the verdict and the override check are the real code paths.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from patchctl.cli.main import cli


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["train", *args], catch_exceptions=False)


def debug_profile(tree: Path, tmp_path: Path, model: str, data: str) -> Result:
    """``train --profile debug`` on cluster ``lab`` of a config naming these model and data paths:
    the debug profile's tests differ only in whether those paths exist."""
    config = tmp_path / "patchctl.toml"
    config.write_text(
        f'[clusters.lab]\nhosts = ["node1"]\nroot = "/root/verl_Uky"\n'
        f'[clusters.lab.paths]\nMODEL_PATH = "{model}"\nDATA_DIR = "{data}"\n'
    )
    return invoke(
        "--target",
        str(tree),
        "--profile",
        "debug",
        "--cluster",
        "lab",
        "--config",
        str(config),
        "--out",
        str(tmp_path / "run"),
    )


def test_dry_run_prints_command_and_env(tree: Path, tmp_path: Path) -> None:
    done = invoke("--target", str(tree), "--dry-run", "--out", str(tmp_path / "run"), "trainer.total_epochs=3")
    assert done.exit_code == 0, done.output
    assert f"cd {tree}" in done.output
    assert "export VERL_ATTN_IMPLEMENTATION=eager" in done.output
    assert f"{sys.executable} -m verl.trainer.main_ppo \\" in done.output
    assert "ray_init.num_cpus=null" in done.output and done.output.rstrip().endswith("trainer.total_epochs=3")
    assert "start --head" in done.output and "export RAY_ADDRESS=127.0.0.1:" in done.output
    assert not (tmp_path / "run").exists()


def test_dry_run_json_of_a_cluster_profile(tree: Path, tmp_path: Path) -> None:
    config = tmp_path / "patchctl.toml"
    config.write_text(
        '[clusters.lab]\nhosts = ["node1"]\nroot = "/root/verl_Uky"\n'
        '[clusters.lab.paths]\nMODEL_PATH = "/models/qwen"\nDATA_DIR = "/data"\n'
    )
    done = invoke(
        "--target", str(tree), "--profile", "debug", "--cluster", "lab", "--config", str(config), "--dry-run", "--json"
    )
    assert done.exit_code == 0, done.output
    doc = json.loads(done.output)
    assert "actor_rollout_ref.model.path=/models/qwen" in doc["command"]
    assert "data.train_files=/data/train_tiny.parquet" in doc["command"]
    assert doc["env"]["VLLM_ATTENTION_BACKEND"] == "FLASH_ATTN"
    missing = invoke("--target", str(tree), "--profile", "debug", "--dry-run")
    assert missing.exit_code == 2 and "needs MODEL_PATH, DATA_DIR" in missing.output


def test_smoke_run_passes_and_reports(tree: Path, tmp_path: Path) -> None:
    pytest.importorskip("tokenizers")
    pytest.importorskip("pyarrow")
    run = tmp_path / "run"
    done = invoke("--target", str(tree), "--out", str(run), "--json")
    assert done.exit_code == 0, done.output
    doc = json.loads(done.stdout)
    assert doc["verdict"] == "pass"
    assert {g["name"]: g["status"] for g in doc["gates"]} == {
        "exit-code": "pass",
        "steps-logged": "pass",
        "metrics-finite": "pass",
        "time-to-first-step": "pass",
        "learning": "pass",
        "rollout-agrees": "skip",
        "update-applied": "pass",
        "weights-synced": "skip",
        "patched-code-ran": "skip",
    }
    assert len(doc["steps"]) == 40 and doc["total_steps"] == 40
    assert doc["tree"]["version"] == "0.5.0" and doc["packages"]["python"]
    assert set(doc["breakdown"]) == {"startup", "ray", "workers", "first_step", "steps", "teardown", "report"}
    assert len(re.findall(r"\x1b\[0m step:\d+ - ", (run / "train.log").read_text())) == 40
    assert (run / "report.json").is_file() and (run / "assets/model/config.json").is_file()
    assert "step 40/40" in done.stderr
    argv = (tmp_path / "argv.txt").read_text()
    assert f"actor_rollout_ref.model.path={run}/assets/model" in argv


def test_failed_run_fails_with_doctor_findings(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("tokenizers")
    pytest.importorskip("pyarrow")
    monkeypatch.setenv("FAKE_MODE", "fail")
    done = invoke("--target", str(tree), "--out", str(tmp_path / "run"))
    assert done.exit_code == 1
    assert "train: FAIL" in done.stdout
    assert "the trainer exited with 3" in done.stdout
    doc = json.loads((tmp_path / "run/report.json").read_text())
    assert doc["verdict"] == "fail"
    assert [f["id"] for f in doc["doctor"]] == ["flash-attn2-not-installed"]


def test_timeout_stops_the_trainer(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("tokenizers")
    pytest.importorskip("pyarrow")
    monkeypatch.setenv("FAKE_MODE", "hang")
    done = invoke("--target", str(tree), "--out", str(tmp_path / "run"), "--timeout", "3", "--json")
    assert done.exit_code == 1
    doc = json.loads(done.stdout)
    assert doc["timed_out"] is True and doc["returncode"] is None
    assert doc["gates"][0]["reason"] == "the trainer was stopped (timeout or interrupt)"


def test_a_timed_out_run_leaves_its_stacks_and_doctor_says_where_it_waited(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37: the trainer is stopped at its timeout only after py-spy took its stack, and the
    flight recorder's variables point into the run directory; doctor reads both back."""
    pytest.importorskip("tokenizers")
    pytest.importorskip("pyarrow")
    from patchctl.train import hangdump

    if hangdump.pyspy() is None:
        pytest.skip("py-spy is not installed (pip install -e '.[test]')")
    monkeypatch.setenv("FAKE_MODE", "hang")
    run = tmp_path / "run"
    done = invoke("--target", str(tree), "--out", str(run), "--timeout", "3", "--json")
    assert done.exit_code == 1
    (dump,) = (run / "stacks").glob("pid-*.txt")  # the stand-in trainer has no RANK
    assert "<module> (verl/trainer/main_ppo.py:" in dump.read_text()  # the stand-in trainer's time.sleep
    assert (run / "nccl_trace").is_dir()
    doctor = subprocess.run(
        [sys.executable, "-m", "patchctl", "doctor", str(run)], capture_output=True, text=True, timeout=120
    )
    assert "hang: the run timed out before its first step" in doctor.stdout
    assert "py-spy:   pid " in doctor.stdout and "waits in <module> (verl/trainer/main_ppo.py:" in doctor.stdout


def test_not_a_verl_tree(tmp_path: Path) -> None:
    done = invoke("--target", str(tmp_path), "--dry-run")
    assert done.exit_code == 2 and "not a verl tree" in done.output


def test_debug_profile_writes_the_tiny_dataset_first(tree: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    data, model = tmp_path / "data", tmp_path / "model"
    data.mkdir()
    model.mkdir()
    done = debug_profile(tree, tmp_path, str(model), str(data))
    assert done.exit_code == 0, done.output
    assert (data / "train_tiny.parquet").is_file()
    assert "train: PASS" in done.stdout
    argv = (tmp_path / "argv.txt").read_text()
    assert f"data.train_files={data}/train_tiny.parquet" in argv and "actor_rollout_ref.rollout.name=vllm" in argv


def test_debug_profile_names_a_missing_model(tree: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    done = debug_profile(tree, tmp_path, f"{tmp_path}/nope", f"{tmp_path}/d")
    assert done.exit_code == 2
    assert done.stderr.endswith(
        f"error: {tmp_path}/nope: not found (profile debug needs it); check MODEL_PATH from cluster lab, or create it\n"
    )


def test_in_process_runs_do_not_count_the_host_process_age(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Timings start at the interpreter's launch only for the `patchctl` command itself: called
    in-process (CliRunner, a long pytest session) the host's age is not patchctl's start-up."""
    pytest.importorskip("tokenizers")
    pytest.importorskip("pyarrow")
    monkeypatch.setattr("patchctl.cli.train_cmd._process_age", lambda: 500.0)
    done = invoke("--target", str(tree), "--out", str(tmp_path / "run"), "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["timings"]["first_step"] < 60


@pytest.mark.parametrize(("value", "shown"), [("0", "0.0"), ("-5", "-5.0"), ("nan", "nan"), ("inf", "inf")])
def test_a_timeout_must_be_positive(tree: Path, value: str, shown: str) -> None:
    done = CliRunner().invoke(cli, ["train", "--target", str(tree), "--dry-run", "--timeout", value])
    assert done.exit_code == 2
    assert (
        f"Invalid value for '--timeout': {shown} is not a number of seconds above 0; write e.g. --timeout 3600"
        in done.output
    )


@pytest.mark.parametrize(
    ("override", "problem"),
    [
        ("=2", "there is no key"),
        ("trainer n=2", "hydra cannot read ' n=2' at column 8"),
        ("data.train_batch_size=[1,2", "it ends before the value is complete"),
    ],
)
def test_malformed_overrides_are_usage_errors_before_anything_runs(
    tree: Path, tmp_path: Path, override: str, problem: str
) -> None:
    done = CliRunner().invoke(cli, ["train", "--target", str(tree), "--out", str(tmp_path / "run"), override])
    assert done.exit_code == 2
    assert done.output.startswith(f"error: override {override!r}: {problem}") and done.output.count("\n") == 1
    assert not (tmp_path / "run").exists()
