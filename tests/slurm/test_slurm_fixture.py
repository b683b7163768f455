"""The harness itself: a job step runs on both nodes, through the login node, and nothing outlives it."""

from __future__ import annotations

import subprocess

from slurm_fixtures import Slurm, SlurmSite


def test_srun_reaches_both_nodes_through_the_login_node(slurm: Slurm, slurm_site: SlurmSite) -> None:
    login = slurm.login
    done = subprocess.run(
        [
            "ssh",
            "-F",
            str(login.ssh_config),
            "node1",
            "srun",
            "-N2",
            "--ntasks-per-node=1",
            "printenv",
            "SLURMD_NODENAME",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.split()) == ["n1", "n2"]


def test_a_killed_slurmd_comes_back_for_the_next_test(slurm: Slurm, slurm_site: SlurmSite) -> None:
    slurm.cluster.slurmd["n2"].kill()
    slurm.cluster.reset()
    assert slurm.cluster.node_states() == {"n1": "idle", "n2": "idle"}
    assert slurm.cluster.steps() == []
