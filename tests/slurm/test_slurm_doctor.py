"""doctor on Slurm's side of a failure (issue 36 req 4): each of the job-ending messages is the top
finding over the generic ``srun: error`` lines around it, in the corpus threads and in the lines
the test suite's own Slurm printed (tests/doctor/excerpts.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "doctor"))

import corpus_score
from excerpts import EXCERPTS

from patchctl.doctor import diagnose, load_signatures

SIGNATURES = load_signatures()


def top(lines: list[str]) -> str:
    return diagnose(lines, SIGNATURES).matches[0].signature.id


@pytest.mark.parametrize("sig", ["slurm-time-limit", "slurm-node-failure"])
def test_the_job_ending_message_outranks_srun_s_error_lines(sig: str) -> None:
    assert top(EXCERPTS[sig].splitlines()) == sig


@pytest.mark.parametrize(
    ("entry", "sig"),
    [
        ("111-slurm-cgroup-oom-kill-tune", "slurm-oom-kill"),
        ("112-slurm-srun-task-exited", "slurm-srun-error"),
        ("115-verl-slurm-rocr-visible-devices", "rocr-visible-devices-set"),
    ],
)
def test_the_corpus_threads_are_diagnosed(entry: str, sig: str) -> None:
    (found,) = [e for e in corpus_score.load() if e.name == entry]
    assert top(found.lines) == sig


def test_srun_s_out_of_memory_line_alone_is_the_oom_kill() -> None:
    assert top(["srun: error: sdumont6156: task 0: Out Of Memory"]) == "slurm-oom-kill"


def test_srun_s_error_line_points_at_the_step_s_own_error() -> None:
    """srun reports a task that died; the task's own error is the cause, even where the nodes'
    output interleaves and srun's line comes first (as in ray-project/ray#6978)."""
    lines = [
        "srun: error: n2: task 0: Exited with exit code 1",
        "(TaskRunner pid=2101) RuntimeError: CUDA error: an illegal memory access was encountered",
    ]
    found = [m.signature.id for m in diagnose(lines, SIGNATURES).matches]
    assert found[-1] == "slurm-srun-error" and found[0] != "slurm-srun-error"


def test_the_gpu_job_s_own_log_names_rocr_visible_devices_not_a_dead_worker() -> None:
    """The two-node H200 job under Slurm (docs/validation/slurm/runs/4-job.out) died because gres/gpu
    set ROCR_VISIBLE_DEVICES beside CUDA_VISIBLE_DEVICES; doctor used to say only that a worker died."""
    log = Path(__file__).parents[2] / "docs" / "validation" / "slurm" / "runs" / "4-job.out"
    assert top(log.read_text(encoding="utf-8", errors="replace").splitlines()) == "rocr-visible-devices-set"


def test_a_linker_line_outranks_triton_s_compile_failure_and_cannot_find_lcuda_stays_its_own() -> None:
    """The one-GPU Slurm run on an H200 (docs/validation/slurm/runs/5-proof-one-lib-link-broken.log)
    failed because unpacking Slurm's packages broke the image's /lib link: the linker line names the
    cause; Triton's compile traceback below it is the consequence. ``-lcuda`` keeps its own fix."""
    log = Path(__file__).parents[2] / "docs/validation/slurm/runs/5-proof-one-lib-link-broken.log"
    found = diagnose(log.read_text(encoding="utf-8").splitlines(), SIGNATURES).matches
    assert [m.signature.id for m in found[:2]] == ["linker-cannot-find-file", "triton-compile-module"]
    assert "/lib/x86_64-linux-gnu/libc.so.6'" in next(c for k, c in found[0].resolves() if k == "command")
    lcuda = diagnose(["/usr/bin/ld: cannot find -lcuda: No such file or directory"], SIGNATURES).matches
    assert [m.signature.id for m in lcuda] == ["triton-cannot-find-lcuda"]  # its own fix, not a second finding
    zlib = ["/usr/bin/ld: cannot find -lz", "collect2: error: ld returned 1 exit status"]
    assert top(zlib) == "linker-cannot-find-file"
