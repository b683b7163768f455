"""The Slurm limits that break Ray (issue 36 req 4), judged from what a node shows: no Slurm needed
for the verdicts; the last test has a real job fail its preflight before Ray starts."""

from __future__ import annotations

from patchctl.slurm.preflight import Seen, cgroup, cpus, cuda_visible, drops_rocr, ray_cpus, rocr_visible, rows

JOB = {"SLURM_CPUS_PER_TASK": "4", "SLURM_JOB_ID": "7"}


def test_ray_gets_the_task_s_cpus_never_the_machine_s() -> None:
    assert ray_cpus(None, Seen(JOB, allowed=4, machine=64)) == 4
    assert ray_cpus(None, Seen({}, allowed=6, machine=64)) == 6
    assert ray_cpus(2, Seen(JOB, allowed=4, machine=64)) == 2


def test_more_ray_cpus_than_the_task_may_use_fails_with_both_fixes() -> None:
    row = cpus(8, (), Seen(JOB, allowed=4, machine=64))
    assert row.status == "fail"
    assert row.value == (
        "Ray would offer 8 CPUs but the task may run on 4 CPU(s) (cpus_per_task 4): "
        "its workers would not all reach the raylet"
    )
    assert row.fix == "set cpus_per_task = 8 in the cluster, or pass --ray-cpus 4"
    assert cpus(4, (), Seen(JOB, allowed=4, machine=64)).status == "pass"


def test_a_trainer_num_cpus_above_the_task_s_fails_naming_the_override() -> None:
    row = cpus(None, ("ray_kwargs.ray_init.num_cpus=16",), Seen(JOB, allowed=4, machine=64))
    assert row.status == "fail"
    assert row.value == "ray_kwargs.ray_init.num_cpus=16 but the task may run on 4 CPU(s) (cpus_per_task 4)"
    assert row.fix.startswith("write ray_kwargs.ray_init.num_cpus=4 (the CPUs the job may use)")
    assert "RAY_num_prestart_python_workers=1" in row.fix
    assert cpus(None, ("ray_init.num_cpus=4",), Seen(JOB, allowed=4, machine=64)).status == "pass"


def test_cgroup_confinement_is_reported_with_the_count_ray_gets() -> None:
    row = cgroup(Seen(JOB, allowed=4, machine=64, cgroup="/system.slice/slurmstepd.scope/job_7"))
    assert row.value.startswith("confined to 4 of the machine's 64 CPUs (/system.slice/slurmstepd.scope/job_7)")
    assert cgroup(Seen(JOB, allowed=64, machine=64)).value == "all 64 CPUs of the machine (no cgroup)"


def test_cuda_visible_devices_is_slurm_s_to_set() -> None:
    seen = Seen({**JOB, "CUDA_VISIBLE_DEVICES": "0,1"}, allowed=4, machine=64)
    assert cuda_visible(2, {}, seen).status == "pass"
    own = cuda_visible(2, {"CUDA_VISIBLE_DEVICES": "0"}, seen)
    assert own.status == "fail" and own.value.startswith("the cluster's env sets CUDA_VISIBLE_DEVICES=0, but Slurm")
    short = cuda_visible(4, {}, seen)
    assert short.status == "fail"
    assert short.value == "the job asked for 4 GPU(s) per node but Slurm set CUDA_VISIBLE_DEVICES='0,1'"
    unset = cuda_visible(1, {}, Seen(JOB, allowed=4, machine=64))
    assert unset.status == "fail" and "CUDA_VISIBLE_DEVICES=None" in unset.value
    assert cuda_visible(0, {}, Seen(JOB, allowed=4, machine=64)).status == "pass"


def test_only_the_num_cpus_keys_count_as_the_trainer_s_cpus() -> None:
    seen = Seen(JOB, allowed=4, machine=64)
    assert cpus(None, ("trainer.total_training_steps=600", "data.train_batch_size=256"), seen).status == "pass"


def test_the_job_runs_the_four_checks_in_order() -> None:
    seen = Seen({**JOB, "CUDA_VISIBLE_DEVICES": "0"}, allowed=4, machine=8)
    got = rows(None, (), 1, {}, seen)
    assert [(r.check, r.status) for r in got] == [
        ("slurm-cpus", "pass"),
        ("slurm-cgroup", "pass"),
        ("slurm-cuda-visible", "pass"),
        ("slurm-rocr-visible", "pass"),
    ]


def test_slurm_s_own_rocr_visible_devices_is_dropped_and_another_one_fails() -> None:
    """Slurm's gres/gpu sets ROCR_VISIBLE_DEVICES to CUDA_VISIBLE_DEVICES's numbers in every step;
    verl's workers refuse the two together (the H200 run: docs/validation/slurm/)."""
    same = Seen({**JOB, "CUDA_VISIBLE_DEVICES": "0,1", "ROCR_VISIBLE_DEVICES": "0,1"}, allowed=4, machine=8)
    assert drops_rocr(same) and rocr_visible(same).status == "warn"
    assert "the run's Ray nodes start without it" in rocr_visible(same).value
    other = Seen({**JOB, "CUDA_VISIBLE_DEVICES": "0", "ROCR_VISIBLE_DEVICES": "1"}, allowed=4, machine=8)
    assert not drops_rocr(other) and rocr_visible(other).status == "fail"
    alone = Seen({**JOB, "ROCR_VISIBLE_DEVICES": "0"}, allowed=4, machine=8)
    assert not drops_rocr(alone) and rocr_visible(alone).status == "pass"
