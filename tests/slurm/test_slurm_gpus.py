"""validate's GPU identity check on a Slurm job (issue 36 req 3): a real Slurm whose two nodes have
``gres/gpu`` from ``gres.conf``, on one machine, with the stub nvidia-smi naming each GPU by the
index the process sees. Slurm numbers each node's GPUs from 0: left so, both nodes run on the
machine's GPU 0, and validate must stop at ray-up naming the GPU and both nodes."""

from __future__ import annotations

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


@pytest.fixture(scope="module")
def gpu_slurm(
    slurm: object, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[SlurmCluster, LoopbackCluster]]:
    """Two GPU nodes (character devices named nvidia0 / nvidia1: Slurm takes nothing else), each
    Slurm's GPU 0 of its own node; ``slurm`` first: it says when no Slurm is installed."""
    base = tmp_path_factory.mktemp("gpu-slurm")
    (base / "dev").mkdir()
    devices = [str(base / "dev" / f"nvidia{i}") for i in (0, 1)]
    for d in devices:
        os.mknod(d, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    cluster = SlurmCluster(base / "slurm", Layout({"n1": (devices[0],), "n2": (devices[1],)}, 2, {"gpu": ("n1", "n2")}))
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


def test_two_nodes_on_one_gpu_stop_at_ray_up_naming_it(
    gpu_slurm: tuple[SlurmCluster, LoopbackCluster], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, login = gpu_slurm
    monkeypatch.setattr(state, "state_dir", lambda: tmp_path / "migrate-state")
    monkeypatch.chdir(tmp_path)
    os.chmod(tmp_path, 0o755)
    tree = tmp_path / "src" / "verl_Uky"
    shutil.copytree(STANDIN, tree, ignore=shutil.ignore_patterns("__pycache__"))
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", "stand-in verl")):
        git(tree, *args)
    port = SlurmSite(None, tmp_path, tree).ray_port  # type: ignore[arg-type] # only its free port is used
    config = tmp_path / "patchctl.toml"
    config.write_text(
        f'[clusters.hpc]\nscheduler = "slurm"\nlogin = "node1"\nssh_config = "{login.ssh_config}"\n'
        f'root = "{tmp_path / "shared" / "verl_Uky"}"\nshared_root = true\npartition = "gpu"\nnodes = 2\n'
        f'gpus_per_node = 1\ncpus_per_task = 1\ntime = "00:05:00"\npython = "{sys.executable}"\ntimeout = 20\n'
        f'ray_port = {port}\npreflight_skip = ["torch", "vllm", "patches"]\n'
        f'[clusters.hpc.env]\nPATH = "{STUB}:/usr/local/bin:/usr/bin:/bin"\n'
    )
    code, out = run("migrate", "hpc", "--config", str(config), "--target", str(tree))
    assert code == 0, out
    code, out = run("validate", "hpc", "--config", str(config), "--out", str(tmp_path / "run"), "--ray-cpus", "1")
    assert code == 1, out
    line = next(ln for ln in out.splitlines() if "is seen by more than one Ray node" in ln)
    assert "GPU-5a1e0000-0000-0000-0000-000000000000" in line
    assert "n1 (CUDA_VISIBLE_DEVICES=0), n2 (CUDA_VISIBLE_DEVICES=0)" in line and "gres.conf" in line
    assert "trainer started" not in out  # stopped before the trainer
