"""Preflight of a validate job, inside the allocation: the Slurm limits that break Ray.

verl's documents (DEBUG_TIPS.md, the FAQ's "Failed to register worker") name them: Ray starts a
worker per CPU it believes it has, and under Slurm's CPU limits (``--cpus-per-task``, the job's
cgroup and cpuset) those workers cannot all reach the raylet; and ``CUDA_VISIBLE_DEVICES`` is
Slurm's to set per job, so a value from the cluster's env hides the job's GPUs or shows others'.
Each check is a pure function of what the node shows, so its verdicts are tested without Slurm.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from patchctl.validate.model import CheckRow

#: the trainer's own CPU count, verl 0.6+ and before
NUM_CPUS_KEYS = ("ray_kwargs.ray_init.num_cpus", "ray_init.num_cpus")
REGISTER_ENV = "RAY_num_prestart_python_workers=1 and RAY_worker_register_timeout_seconds=600"


@dataclass(frozen=True)
class Seen:
    """What the job's first node shows."""

    #: the variables of the batch step (SLURM_*, CUDA_VISIBLE_DEVICES)
    env: Mapping[str, str]
    #: CPUs this task may run on (``os.sched_getaffinity``)
    allowed: int
    #: CPUs of the machine
    machine: int
    #: the task's cgroup (``/proc/self/cgroup``'s path; "" where there is none)
    cgroup: str = ""


def ray_cpus(requested: int | None, seen: Seen) -> int:
    """The CPUs each Ray node offers: the ones asked for, else the task's (as verl's script passes
    ``--num-cpus $SLURM_CPUS_PER_TASK``), never what the machine has."""
    if requested is not None:
        return requested
    per_task = seen.env.get("SLURM_CPUS_PER_TASK", "")
    return int(per_task) if per_task.isdigit() else seen.allowed


def _override(overrides: Sequence[str]) -> tuple[str, int] | None:
    for o in overrides:
        key, _, value = o.lstrip("+~").partition("=")
        if key in NUM_CPUS_KEYS and value.strip().isdigit():
            return key, int(value)
    return None


def cpus(requested: int | None, overrides: Sequence[str], seen: Seen) -> CheckRow:
    offered = ray_cpus(requested, seen)
    per_task = seen.env.get("SLURM_CPUS_PER_TASK") or "not set"
    limit = f"the task may run on {seen.allowed} CPU(s) (cpus_per_task {per_task})"
    if offered > seen.allowed:
        return CheckRow(
            "slurm-cpus",
            "fail",
            f"Ray would offer {offered} CPUs but {limit}: its workers would not all reach the raylet",
            f"set cpus_per_task = {offered} in the cluster, or pass --ray-cpus {seen.allowed}",
        )
    asked = _override(overrides)
    if asked is not None and asked[1] > seen.allowed:
        return CheckRow(
            "slurm-cpus",
            "fail",
            f"{asked[0]}={asked[1]} but {limit}",
            f"write {asked[0]}={seen.allowed} (the CPUs the job may use), or raise cpus_per_task; "
            f"and keep {REGISTER_ENV}",
        )
    return CheckRow("slurm-cpus", "pass", f"Ray offers {offered} CPU(s); {limit}")


def cgroup(seen: Seen) -> CheckRow:
    if seen.allowed < seen.machine:
        return CheckRow(
            "slurm-cgroup",
            "pass",
            f"confined to {seen.allowed} of the machine's {seen.machine} CPUs ({seen.cgroup or 'cpuset'}); "
            "Ray is given that count, never the machine's",
        )
    return CheckRow("slurm-cgroup", "pass", f"all {seen.machine} CPUs of the machine ({seen.cgroup or 'no cgroup'})")


def cuda_visible(gpus: int, configured: Mapping[str, str], seen: Seen) -> CheckRow:
    if "CUDA_VISIBLE_DEVICES" in configured:
        return CheckRow(
            "slurm-cuda-visible",
            "fail",
            f"the cluster's env sets CUDA_VISIBLE_DEVICES={configured['CUDA_VISIBLE_DEVICES']}, but Slurm sets it "
            "for each job to the GPUs it allocated",
            "remove CUDA_VISIBLE_DEVICES from the cluster's env; ask for GPUs with gpus_per_node or gres",
        )
    value = seen.env.get("CUDA_VISIBLE_DEVICES")
    if gpus == 0:
        return CheckRow(
            "slurm-cuda-visible", "pass", "no GPU asked for" + (f" (CUDA_VISIBLE_DEVICES={value})" if value else "")
        )
    shown = [d for d in (value or "").split(",") if d.strip()]
    if value is None or len(shown) != gpus:
        return CheckRow(
            "slurm-cuda-visible",
            "fail",
            f"the job asked for {gpus} GPU(s) per node but Slurm set CUDA_VISIBLE_DEVICES={value!r}",
            "check the partition's gres configuration (GresTypes=gpu, gres.conf) and the job's gpus_per_node",
        )
    return CheckRow("slurm-cuda-visible", "pass", f"CUDA_VISIBLE_DEVICES={value} as Slurm set it ({gpus} GPU(s))")


def drops_rocr(seen: Seen) -> bool:
    """Slurm's gres/gpu sets ``ROCR_VISIBLE_DEVICES`` to the same numbers as ``CUDA_VISIBLE_DEVICES``
    in every step (unless gres.conf says ``Flags=nvidia_gpu_env``), and verl's workers refuse the
    two together (``Please don't set ROCR_VISIBLE_DEVICES when HIP/CUDA_VISIBLE_DEVICES is set``,
    verl/single_controller/base/worker.py): the job's Ray nodes then start without it."""
    rocr, cuda = seen.env.get("ROCR_VISIBLE_DEVICES"), seen.env.get("CUDA_VISIBLE_DEVICES")
    return bool(rocr) and rocr == cuda


def rocr_visible(seen: Seen) -> CheckRow:
    rocr, cuda = seen.env.get("ROCR_VISIBLE_DEVICES"), seen.env.get("CUDA_VISIBLE_DEVICES")
    if not rocr or not cuda:
        return CheckRow("slurm-rocr-visible", "pass", "ROCR_VISIBLE_DEVICES not set beside CUDA_VISIBLE_DEVICES")
    if drops_rocr(seen):
        return CheckRow(
            "slurm-rocr-visible",
            "warn",
            f"Slurm set ROCR_VISIBLE_DEVICES={rocr} beside CUDA_VISIBLE_DEVICES={cuda}, which verl's workers refuse; "
            "the run's Ray nodes start without it",
            "gres.conf Flags=nvidia_gpu_env on NVIDIA nodes makes Slurm set CUDA_VISIBLE_DEVICES alone",
        )
    return CheckRow(
        "slurm-rocr-visible",
        "fail",
        f"ROCR_VISIBLE_DEVICES={rocr} differs from CUDA_VISIBLE_DEVICES={cuda}: verl's workers refuse the two "
        "together, and they name different GPUs",
        "remove ROCR_VISIBLE_DEVICES from the cluster's env and the job's environment",
    )


def rows(
    requested: int | None, overrides: Sequence[str], gpus: int, configured: Mapping[str, str], seen: Seen
) -> tuple[CheckRow, ...]:
    return (
        cpus(requested, overrides, seen),
        cgroup(seen),
        cuda_visible(gpus, configured, seen),
        rocr_visible(seen),
    )
