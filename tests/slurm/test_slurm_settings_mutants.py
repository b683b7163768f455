"""A Slurm cluster's keys, as few as a user writes (slurm/settings.py): the defaults, the GPU count a
``gres`` string gives, and the bounds. Each test fails on a bug the mutation run planted (issue 41
req 8): an optional key made required, a GRES count read wrong, a bound moved by one, a check dropped.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.clirun import run

from patchctl.clusters import load_cluster
from patchctl.errors import ManifestError

MINIMAL = """
[clusters.hpc]
scheduler = "slurm"
login = "login1"
root = "/shared/verl_Uky"
"""


def load(tmp_path: Path, extra: str = "") -> object:
    file = tmp_path / "patchctl.toml"
    file.write_text(MINIMAL + extra)
    return load_cluster("hpc", file)


def test_a_cluster_with_only_scheduler_login_and_root_loads_with_the_documented_defaults(tmp_path: Path) -> None:
    c = load(tmp_path)
    job = c.slurm  # type: ignore[attr-defined]
    assert job is not None
    assert (job.shared_root, job.nodes, job.time, job.time_seconds, job.gpus) == (False, 1, "01:00:00", 3600, 0)
    assert job.sbatch_options() == ["--nodes=1", "--ntasks-per-node=1", "--time=01:00:00", "--no-requeue"]


def test_a_slurm_cluster_without_login_is_named_with_exit_2(tmp_path: Path) -> None:
    file = tmp_path / "patchctl.toml"
    file.write_text(MINIMAL.replace('login = "login1"\n', ""))
    with pytest.raises(ManifestError) as caught:
        load_cluster("hpc", file)
    assert caught.value.key == "clusters.hpc.login"
    code, out = run("migrate", "hpc", "--config", str(file))
    assert code == 2 and "clusters.hpc.login" in out, out


@pytest.mark.parametrize(
    ("gres", "gpus"),
    [
        ("gpu", 1),  # a bare gpu entry asks for one
        ("gpu:4", 4),
        ("gpu:a100", 1),  # a type without a count: one of that type
        ("gpu:a100:8", 8),
        ("nic:2", 0),  # no gpu entry: a CPU job
        ("nic:2,gpu:h100:2", 2),
    ],
)
def test_a_gres_string_gives_the_gpus_each_node_gets(tmp_path: Path, gres: str, gpus: int) -> None:
    job = load(tmp_path, f'gres = "{gres}"\n').slurm  # type: ignore[attr-defined]
    assert job.gpus == gpus and f"--gres={gres}" in job.sbatch_options()


@pytest.mark.parametrize("gres", ["gpu 4", "gpu;id", "-gpu:4", "gpu:4,"])
def test_a_gres_that_is_no_gres_string_is_refused(tmp_path: Path, gres: str) -> None:
    with pytest.raises(ManifestError) as caught:
        load(tmp_path, f'gres = "{gres}"\n')
    assert caught.value.key == "clusters.hpc.gres" and "is not a GRES string" in str(caught.value)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("nodes = 1\n", "--nodes=1"),  # the fewest nodes a job can ask for
        ("gpus_per_node = 0\n", "--gpus-per-node=0"),  # a CPU-only job
        ("cpus_per_task = 1\n", "--cpus-per-task=1"),
    ],
)
def test_the_least_value_of_each_count_is_accepted(tmp_path: Path, extra: str, expected: str) -> None:
    job = load(tmp_path, extra).slurm  # type: ignore[attr-defined]
    assert expected in job.sbatch_options()


@pytest.mark.parametrize(
    ("extra", "key"), [("cpus_per_task = 0\n", "cpus_per_task"), ("gpus_per_node = -1\n", "gpus_per_node")]
)
def test_a_count_below_its_least_is_refused(tmp_path: Path, extra: str, key: str) -> None:
    with pytest.raises(ManifestError) as caught:
        load(tmp_path, extra)
    assert caught.value.key == f"clusters.hpc.{key}" and "is out of range" in str(caught.value)


def test_a_time_limit_of_one_second_is_a_time_limit(tmp_path: Path) -> None:
    """The bar is "more than nothing": "00:00:00" is refused (test_slurm_config.py), one second is not."""
    job = load(tmp_path, 'time = "0-00:00:01"\n').slurm  # type: ignore[attr-defined]
    assert job.time_seconds == 1 and "--time=0-00:00:01" in job.sbatch_options()


@pytest.mark.parametrize(
    ("option", "fix"),
    [
        ("--partition=gpu", "set the key partition instead"),  # a key says it
        ("--wrap=true", "remove it (the job's script is patchctl's)"),  # patchctl needs it for itself
        ("--no-requeue", "remove it (patchctl sets it)"),
    ],
)
def test_an_sbatch_option_patchctl_sets_names_the_key_or_why(tmp_path: Path, option: str, fix: str) -> None:
    with pytest.raises(ManifestError) as caught:
        load(tmp_path, f'sbatch = ["{option}"]\n')
    assert caught.value.key == "clusters.hpc.sbatch[0]" and "conflicts with an option patchctl sets" in str(
        caught.value
    )
    assert fix in str(caught.value)
