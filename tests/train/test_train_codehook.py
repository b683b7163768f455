"""The code hook on real processes: a driver run as ``python -m``, a child it spawns the way vLLM
starts its engine and workers (multiprocessing "spawn"), and a child started with another
``PYTHONPATH`` the way a worker of a Ray node started elsewhere is (where a shadowing verl wins)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchctl.cli.main import cli
from patchctl.train import codehook, launcher
from patchctl.train.codehook import Process, Proof, Watch
from patchctl.train.gates import GateStatus

PATCHED = "verl/workers/rollout/vllm_rollout/__init__.py"
MAIN = """
import multiprocessing, os, subprocess, sys

def child():
    import verl.workers.rollout.vllm_rollout  # noqa: F401


def package_child():
    import verl.workers.rollout  # noqa: F401

if __name__ == "__main__":
    if os.environ.get("IMPORT_PATCHED", "1") == "package":
        import verl.workers.rollout  # noqa: F401  (the code path, without the patched module)
        p = multiprocessing.get_context("spawn").Process(target=package_child)
        p.start(); p.join()
    elif os.environ.get("IMPORT_PATCHED", "1") == "1":
        import verl.workers.rollout.vllm_rollout  # noqa: F401
        p = multiprocessing.get_context("spawn").Process(target=child)
        p.start(); p.join()
        assert p.exitcode == 0
    if os.environ.get("SHADOW"):
        env = {**os.environ, "PYTHONPATH": os.environ["SHADOW"] + os.pathsep + os.environ["PYTHONPATH"]}
        subprocess.run([sys.executable, "-c", "import verl.workers.rollout.vllm_rollout"], env=env, check=True,
                       cwd=os.environ["SHADOW"])
    print("step:1 - actor/pg_loss:0.0 - critic/score/mean:0.5", flush=True)
"""


def verl_tree(root: Path, record: bool = True) -> Path:
    """A verl package whose rollout __init__ is patched, with the apply record that says so."""
    for rel, text in {
        "verl/__init__.py": "",
        "verl/trainer/__init__.py": "",
        "verl/trainer/main_ppo.py": MAIN,
        "verl/workers/__init__.py": "",
        "verl/workers/rollout/__init__.py": "",
        PATCHED: "cuda_stubs = '/usr/local/cuda/lib64/stubs'  # Uky\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    if record:
        entries = [
            {
                "patchset": "uky",
                "patch": "triton-cuda-stubs",
                "kind": "prelude",
                "path": PATCHED,
                "sha256_before": None,
                "sha256_after": None,
                "applied_at": "now",
            },
            {
                "patchset": "uky",
                "patch": "fix-triton",
                "kind": "add-file",
                "path": "fix_triton.py",
                "sha256_before": None,
                "sha256_after": None,
                "applied_at": "now",
            },
        ]
        (root / ".patchctl").mkdir()
        (root / ".patchctl/applied.json").write_text(
            json.dumps(
                {"format": 1, "upstream": {"version": "0.9.1", "commit": None}, "patchsets": {}, "patches": entries}
            )
        )
    return root


def run_driver(tree: Path, run_dir: Path, **env: str) -> Proof:
    watched = codehook.watches(tree)
    codehook.install(run_dir)
    path = os.pathsep.join([str(tree), str(run_dir / codehook.DIR_NAME)])
    full = {**os.environ, **codehook.env(run_dir, watched), "PYTHONPATH": path, **env}
    subprocess.run([sys.executable, *launcher.ENTRY], cwd=tree, env=full, check=True, capture_output=True)
    return codehook.read(run_dir, tree, watched)


def test_watches_are_the_code_patches(tmp_path: Path) -> None:
    tree = verl_tree(tmp_path / "t")
    assert codehook.watches(tree) == (Watch("uky", "triton-cuda-stubs", "verl.workers.rollout.vllm_rollout", PATCHED),)
    assert codehook.module_of("verl/a/b.py") == "verl.a.b" and codehook.module_of("scripts/x.py") is None
    assert codehook.module_of("verl/../x.py") is None


def test_every_process_records_the_patched_module_from_the_tree(tmp_path: Path) -> None:
    tree = verl_tree(tmp_path / "t")
    proof = run_driver(tree, tmp_path / "run")
    roles = sorted(p.role for p in proof.processes)
    assert roles == ["driver", "python"]  # the driver and its spawned child
    assert all(p.imports["verl.workers.rollout.vllm_rollout"] == str(tree / PATCHED) for p in proof.processes)
    gate = codehook.gate(proof)
    assert gate.status is GateStatus.PASS, gate.reason
    doc = proof.to_json()
    assert len(doc["patches"][0]["from_tree"]) == 2 and doc["patches"][0]["from_elsewhere"] == []
    assert doc["verl_from"] == [str(tree / "verl/__init__.py")]


def test_a_shadowing_verl_fails(tmp_path: Path) -> None:
    """An unpatched verl first on one process's path: that process ran verl from elsewhere."""
    tree = verl_tree(tmp_path / "t")
    shadow = verl_tree(tmp_path / "site-packages", record=False)
    (shadow / PATCHED).write_text("")  # unpatched
    proof = run_driver(tree, tmp_path / "run", SHADOW=str(shadow))
    gate = codehook.gate(proof)
    assert gate.status is GateStatus.FAIL
    assert f"ran verl from {shadow / 'verl/__init__.py'} (not the tree: {tree.resolve()})" in gate.reason
    assert proof.to_json()["patches"][0]["from_elsewhere"][0]["file"] == str(shadow / PATCHED)


def test_a_patched_module_never_imported_on_its_path_fails(tmp_path: Path) -> None:
    """The run imported the patch's package (it took that code path) but not the patched module."""
    tree = verl_tree(tmp_path / "t")
    gate = codehook.gate(run_driver(tree, tmp_path / "run", IMPORT_PATCHED="package"))
    assert gate.status is GateStatus.FAIL
    assert gate.reason == (
        "patch triton-cuda-stubs (uky) edits verl.workers.rollout.vllm_rollout: the run imported "
        "its package verl.workers.rollout but no process imported the module, so the patched code "
        "never ran"
    )


def test_a_patch_off_the_runs_path_is_listed_not_failed(tmp_path: Path) -> None:
    """verl 0.5.0's vLLM rollout patch in an HF-rollout run: its package was never imported."""
    tree = verl_tree(tmp_path / "t")
    proof = run_driver(tree, tmp_path / "run", IMPORT_PATCHED="0")
    gate = codehook.gate(proof)
    assert gate.status is GateStatus.SKIP
    assert gate.reason == (
        "no code patch is on this run's path; off this run's path (their packages never imported): triton-cuda-stubs"
    )
    assert proof.to_json()["patches"][0]["on_path"] is False


def test_a_hook_hidden_by_the_trees_own_sitecustomize_fails(tmp_path: Path) -> None:
    tree = verl_tree(tmp_path / "t")
    (tree / "sitecustomize.py").write_text("")
    gate = codehook.gate(run_driver(tree, tmp_path / "run"))
    assert gate.status is GateStatus.FAIL and "no process of the run loaded patchctl's code hook" in gate.reason


def test_the_environments_sitecustomize_still_runs(tmp_path: Path) -> None:
    tree = verl_tree(tmp_path / "t")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'a').write('x')\n")
    run_dir = tmp_path / "run"
    codehook.install(run_dir)
    env = {
        **os.environ,
        **codehook.env(run_dir, codehook.watches(tree)),
        "PYTHONPATH": os.pathsep.join([str(tree), str(run_dir / codehook.DIR_NAME), str(theirs)]),
    }
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    assert (tmp_path / "ran").read_text() == "x"


def test_a_rollout_patch_must_run_in_the_engines_workers() -> None:
    w = Watch("uky", "triton-cuda-stubs", "verl.workers.rollout.vllm_rollout", PATCHED)
    f = f"/t/{PATCHED}"
    worker = Process(3, "VLLM::Worker", {"verl": "/t/verl/__init__.py"})
    proof = Proof("/t", (w,), (Process(1, "driver", {w.module: f}), worker))
    gate = codehook.gate(proof)
    assert gate.status is GateStatus.FAIL and "acts in VLLM::Worker processes; none of the run's 1" in gate.reason
    healthy = Proof("/t", (w,), (Process(1, "driver", {w.module: f}), Process(3, "VLLM::Worker", {w.module: f})))
    assert codehook.gate(healthy).status is GateStatus.PASS


def test_ray_uploaded_copy_is_named() -> None:
    w = Watch("uky", "p", "verl.x", "verl/x.py")
    copy = "/tmp/ray/session_1/runtime_resources/working_dir_files/abc/verl/x.py"
    gate = codehook.gate(Proof("/t", (w,), (Process(5, "ray::TaskRunner", {"verl.x": copy}),)))
    assert gate.status is GateStatus.FAIL and "(a copy Ray uploaded: /t)" in gate.reason


def test_train_puts_the_hook_in_every_process_and_reports_it(tmp_path: Path) -> None:
    """Through ``patchctl train``: the hook folder follows the tree on PYTHONPATH, the report lists
    the processes per code patch, and the gate passes; without a code patch there is no hook."""
    pytest.importorskip("tokenizers")
    tree = verl_tree(tmp_path / "t")
    (tree / "verl/version").mkdir()
    (tree / "verl/version/version").write_text("0.9.1\n")
    run = tmp_path / "run"
    done = CliRunner().invoke(
        cli,
        ["train", "--target", str(tree), "--profile", "debug", "--out", str(run), "--json", "trainer.total_epochs=1"],
        env={"MODEL_PATH": str(tmp_path), "DATA_DIR": str(tmp_path)},
    )
    doc = json.loads(run.joinpath("report.json").read_text())
    assert doc["env"]["PYTHONPATH"].split(os.pathsep)[:2] == [str(tree), str(run.resolve() / "codehook")]
    gates = {g["name"]: g for g in doc["gates"]}
    assert gates["patched-code-ran"]["status"] == "pass", (gates["patched-code-ran"], done.output)
    assert [p["role"] for p in doc["patched_code"]["patches"][0]["from_tree"]] == ["driver", "python"]


def test_a_hook_that_reached_only_the_driver_says_so() -> None:
    """Ray workers started without the trainer's environment: no proof where the patch acts."""
    w = Watch("uky", "triton-cuda-stubs", "verl.workers.rollout.vllm_rollout", PATCHED)
    proof = Proof(
        "/t",
        (w,),
        (
            Process(
                1,
                "driver",
                {"verl": "/t/verl/__init__.py", "verl.workers.rollout": "/t/verl/workers/rollout/__init__.py"},
            ),
        ),
    )
    gate = codehook.gate(proof)
    assert gate.status is GateStatus.FAIL and "only the driver loaded the code hook" in gate.reason


def test_node_env_for_a_ray_node_started_apart(tmp_path: Path) -> None:
    tree = verl_tree(tmp_path / "t")
    got = codehook.node_env(tree, tmp_path / "run", "/opt/site")
    assert got["PYTHONPATH"] == os.pathsep.join([str(tree), str(tmp_path / "run" / "codehook"), "/opt/site"])
    assert got[codehook.ENV_WATCH] == "verl,verl.workers.rollout,verl.workers.rollout.vllm_rollout"
    assert codehook.node_env(verl_tree(tmp_path / "bare", record=False), tmp_path / "run") == {}
