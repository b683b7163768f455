"""A Slurm cluster's keys (issue 36 req 1): every key read, every bad value named with its key and exit 2.

No Slurm is needed: the config is checked when it loads, before any host is reached.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.clirun import run

from patchctl.clusters import load_cluster
from patchctl.errors import ManifestError
from patchctl.slurm.settings import time_seconds

GOOD = """
[clusters.hpc]
scheduler = "slurm"
login = "me@login1"
root = "/shared/verl_Uky"
shared_root = true
partition = "gpu"
account = "proj123"
qos = "normal"
nodes = 2
gpus_per_node = 4
cpus_per_task = 32
time = "1-02:03:04"
sbatch = ["--constraint=a100", "--exclusive"]
python = "/opt/py/bin/python3"
ray_port = 6400
"""


def write(tmp_path: Path, text: str) -> Path:
    file = tmp_path / "patchctl.toml"
    file.write_text(text)
    return file


def test_every_key_is_read(tmp_path: Path) -> None:
    c = load_cluster("hpc", write(tmp_path, GOOD))
    job = c.slurm
    assert job is not None
    assert [h.ssh for h in c.hosts] == ["me@login1"] and c.hosts[0].root == "/shared/verl_Uky"
    assert c.hosts[0].ray_port == 6400 and c.python == "/opt/py/bin/python3"
    assert (job.partition, job.account, job.qos, job.nodes, job.gpus, job.cpus_per_task) == (
        "gpu",
        "proj123",
        "normal",
        2,
        4,
        32,
    )
    assert job.shared_root and job.time_seconds == ((24 + 2) * 60 + 3) * 60 + 4
    assert job.sbatch_options() == [
        "--nodes=2",
        "--ntasks-per-node=1",
        "--time=1-02:03:04",
        "--no-requeue",
        "--partition=gpu",
        "--account=proj123",
        "--qos=normal",
        "--gpus-per-node=4",
        "--cpus-per-task=32",
        "--constraint=a100",
        "--exclusive",
    ]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30", 1800),
        ("30:15", 1815),
        ("01:00:00", 3600),
        ("01:02:03", 3723),
        ("2-0", 172800),
        ("1-01:30", 91800),
        ("0-00:00:05", 5),
    ],
)
def test_slurm_time_formats(text: str, seconds: int) -> None:
    assert time_seconds(text) == seconds


def test_a_gres_string_counts_its_gpus(tmp_path: Path) -> None:
    text = GOOD.replace("gpus_per_node = 4", 'gres = "gpu:a100:8"')
    c = load_cluster("hpc", write(tmp_path, text))
    assert c.slurm is not None and c.slurm.gpus == 8 and "--gres=gpu:a100:8" in c.slurm.sbatch_options()


@pytest.mark.parametrize(
    ("change", "key", "problem"),
    [
        (('time = "1-02:03:04"', 'time = "1h"'), "time", "'1h' is not a Slurm time limit"),
        (('time = "1-02:03:04"', 'time = "00:00:00"'), "time", "'00:00:00' is not a Slurm time limit"),
        (("gpus_per_node = 4", 'gpus_per_node = 4\ngres = "gpu:4"'), "gres", "conflicts with gpus_per_node"),
        (('partition = "gpu"', 'partition = "gpu;rm -rf ~"'), "partition", "is not a Slurm name"),
        (('account = "proj123"', 'account = "-A x"'), "account", "is not a Slurm name"),
        (('qos = "normal"', 'qos = "a\\nb"'), "qos", "contains the control character \\n"),
        (('login = "me@login1"', 'login = "-oProxyCommand=x"'), "login", "is not an ssh destination"),
        (("nodes = 2", "nodes = 0"), "nodes", "0 is out of range"),
        (('"--exclusive"]', '"--time=5"]'), "sbatch[1]", "conflicts with an option patchctl sets"),
        (('"--exclusive"]', '"-p other"]'), "sbatch[1]", "is not one long sbatch option"),
        (('"--exclusive"]', '"--x=$(id)"]'), "sbatch[1]", "is not one long sbatch option"),
        (('root = "/shared/verl_Uky"', 'root = "/local/%n/verl_Uky"'), "root", "holds %n"),
        (("nodes = 2", 'nodes = 2\nhosts = ["n1"]'), "hosts", 'conflicts with scheduler = "slurm"'),
        (("nodes = 2", "nodes = 2\nnodse = 3"), "nodse", "unknown key (did you mean 'nodes'?)"),
        (('scheduler = "slurm"', 'scheduler = "pbs"'), "scheduler", "'pbs' is not allowed"),
    ],
)
def test_a_bad_key_is_named(tmp_path: Path, change: tuple[str, str], key: str, problem: str) -> None:
    assert change[0] in GOOD
    file = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(ManifestError) as caught:
        load_cluster("hpc", file)
    assert caught.value.key == f"clusters.hpc.{key}"
    assert problem in str(caught.value)


def test_a_bad_key_stops_the_command_with_exit_2(tmp_path: Path) -> None:
    file = write(tmp_path, GOOD.replace('time = "1-02:03:04"', 'time = "90 minutes"'))
    for command in ("migrate", "validate"):
        code, out = run(command, "hpc", "--config", str(file))
        assert code == 2, out
        assert f"{file}: key 'clusters.hpc.time': '90 minutes' is not a Slurm time limit" in out
        assert len(out.strip().splitlines()) == 1
