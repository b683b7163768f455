"""validate's GPU identity check on a Slurm job (issue 36 req 3): a real Slurm whose two nodes have
``gres/gpu`` from ``gres.conf``, on one machine, with the stub nvidia-smi naming each GPU by the
index the process sees. Slurm numbers each node's GPUs from 0: left so, both nodes run on the
machine's GPU 0, and validate must stop at ray-up naming the GPU and both nodes; with a
TaskProlog that numbers them as this machine does (as separate machines would), the job passes
with two distinct GPUs, and without the ``ROCR_VISIBLE_DEVICES`` Slurm sets beside
``CUDA_VISIBLE_DEVICES``, which verl's workers refuse (seen on the H200s: docs/validation/slurm/)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_fixtures import STANDIN, SlurmSite, git
from slurm_harness import Layout, SlurmCluster
from sshd_harness import LoopbackCluster
from tests.clirun import run

from patchctl.migrate import state

STUB = Path(__file__).parent.parent / "validate" / "stub_bin"


def _cluster(base: Path, physical: bool) -> Iterator[tuple[SlurmCluster, LoopbackCluster]]:
    """Two GPU nodes (character devices named nvidia0 / nvidia1: Slurm takes nothing else)."""
    (base / "dev").mkdir()
    devices = [str(base / "dev" / f"nvidia{i}") for i in (0, 1)]
    for d in devices:
        os.mknod(d, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    layout = Layout({"n1": (devices[0],), "n2": (devices[1],)}, 2, {"gpu": ("n1", "n2")}, physical=physical)
    cluster = SlurmCluster(base / "slurm", layout)
    try:
        login = LoopbackCluster(base / "sshd", 1, env={"SLURM_CONF": str(cluster.conf)})
    except BaseException:
        cluster.close()
        raise
    try:
        yield cluster, login
    finally:
        login.close()
        cluster.close()


@pytest.fixture(scope="module")
def local_numbers(
    slurm: object, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[SlurmCluster, LoopbackCluster]]:
    """Each node's GPU is Slurm's GPU 0 of that node (``slurm`` first: it says when no Slurm is installed)."""
    yield from _cluster(tmp_path_factory.mktemp("gpu-slurm"), physical=False)


@pytest.fixture(scope="module")
def machine_numbers(
    slurm: object, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[SlurmCluster, LoopbackCluster]]:
    """n2's GPU numbered 1, as this one machine numbers it."""
    yield from _cluster(tmp_path_factory.mktemp("gpu-slurm-m"), physical=True)


def _validate(login: LoopbackCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str]:
    monkeypatch.setattr(state, "state_dir", lambda: tmp_path / "migrate-state")
    monkeypatch.chdir(tmp_path)
    os.chmod(tmp_path, 0o755)
    tree = tmp_path / "src" / "verl_Uky"
    shutil.copytree(STANDIN, tree, ignore=shutil.ignore_patterns("__pycache__"))
    for a in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", "stand-in verl")):
        git(tree, *a)
    port = SlurmSite(None, tmp_path, tree).ray_port  # type: ignore[arg-type] # only its free port is used
    config = tmp_path / "patchctl.toml"
    config.write_text(
        f'[clusters.hpc]\nscheduler = "slurm"\nlogin = "node1"\nssh_config = "{login.ssh_config}"\n'
        f'root = "{tmp_path / "shared" / "verl_Uky"}"\nshared_root = true\npartition = "gpu"\nnodes = 2\n'
        f'gpus_per_node = 1\ncpus_per_task = 1\ntime = "00:05:00"\npython = "{sys.executable}"\ntimeout = 20\n'
        f'ray_port = {port}\npreflight_skip = ["torch", "vllm", "patches"]\n'
        f'[clusters.hpc.env]\nPATH = "{STUB}:/usr/local/bin:/usr/bin:/bin"\n'
        # the stub GPUs' claims (gpulease.py) in this test's own folder, never another suite's
        f'PATCHCTL_GPU_LEASES = "{tmp_path / "gpuleases"}"\n'
    )
    code, out = run("migrate", "hpc", "--config", str(config), "--target", str(tree))
    assert code == 0, out
    return run("validate", "hpc", "--config", str(config), "--out", str(tmp_path / "run"), "--ray-cpus", "1", *args)


def test_two_nodes_on_one_gpu_stop_at_ray_up_naming_it(
    local_numbers: tuple[SlurmCluster, LoopbackCluster], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out = _validate(local_numbers[1], tmp_path, monkeypatch)
    assert code == 1, out
    line = next(ln for ln in out.splitlines() if "is seen by more than one Ray node" in ln)
    assert "GPU-5a1e0000-0000-0000-0000-000000000000" in line
    assert "n1 (CUDA_VISIBLE_DEVICES=0), n2 (CUDA_VISIBLE_DEVICES=0)" in line and "gres.conf" in line
    assert "trainer started" not in out  # stopped before the trainer


def test_distinct_gpus_pass_and_ray_never_sees_slurm_s_rocr_visible_devices(
    machine_numbers: tuple[SlurmCluster, LoopbackCluster], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out = _validate(machine_numbers[1], tmp_path, monkeypatch, "--json")
    assert code == 0, out
    doc = json.loads(out[out.index("{\n") :])
    nodes = {n["label"]: n for n in doc["ray"]["nodes"]}
    assert [nodes[n]["cuda_visible_devices"] for n in ("n1", "n2")] == ["0", "1"]
    assert len({u for n in nodes.values() for u in n["gpu_uuids"]}) == 2
    # Slurm set ROCR_VISIBLE_DEVICES in every step; the Ray nodes' workers must not see it
    assert [nodes[n]["worker_env"].get("ROCR_VISIBLE_DEVICES", "absent") for n in ("n1", "n2")] == [None, None]
    row = next(r for r in doc["preflight"][0]["rows"] if r["check"] == "slurm-rocr-visible")
    assert row["status"] == "warn" and row["value"].startswith("Slurm set ROCR_VISIBLE_DEVICES=0 beside "), row
