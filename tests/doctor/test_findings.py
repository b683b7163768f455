"""Root cause first, never confidently wrong: the four defects of issue 26, ranking, counts, and
the wording of findings that cannot be confirmed."""

from __future__ import annotations

import pytest

from patchctl.doctor import diagnose, load_signatures

SIGNATURES = load_signatures()
#: the warning PyTorch prints for every driver-stack failure of its kind (errors 802-805)
CUDA_INIT_802 = (
    "/usr/lib/python3/site-packages/torch/cuda/__init__.py:174: UserWarning: CUDA initialization: "
    "Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
    "NumCudaDevices() that might have already set an error? Error 802: system not yet initialized "
    "(Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:109.)"
)


def ids(lines: list[str]) -> list[str]:
    return [m.signature.id for m in diagnose(lines, SIGNATURES).matches]


def test_defect_1_the_cuda_init_warning_is_a_driver_stack_failure_not_a_duplicate_gpu():
    (m,) = diagnose([CUDA_INIT_802], SIGNATURES).matches
    assert m.signature.id == "cuda-driver-init" and dict(m.captures) == {"code": "802"}
    assert not m.fatal, "torch prints it as a UserWarning; the error that ends the run comes later"
    assert "CUDA_VISIBLE_DEVICES" not in " ".join(t for _, t in m.resolves())
    assert "nvidia-fabricmanager" in " ".join(t for _, t in m.resolves())


def test_defect_2_verl_prints_the_available_gpus_as_a_float():
    (m,) = diagnose(["ValueError: Total available GPUs 8.0 is less than total desired GPUs 16"], SIGNATURES).matches
    assert m.signature.id == "placement-group-pending"
    assert ("override", "trainer.n_gpus_per_node=8 (the GPUs Ray sees; or join the missing nodes)") in m.resolves()


def test_defect_3_the_log_requests_type_error_form():
    line = "TypeError: AsyncEngineArgs.__init__() got an unexpected keyword argument 'disable_log_requests'"
    (m,) = diagnose([line], SIGNATURES).matches
    assert m.signature.id == "vllm-disable-log-requests" and m.confidence == "likely"


def test_defect_4_vllm_prints_cuda_out_of_memory_in_lower_case():
    (m,) = diagnose(["cuda error: out of memory at /workspace/csrc/cumem_allocator.cpp:62"], SIGNATURES).matches
    assert m.signature.id == "vllm-gpu-oom" and m.confidence == "likely"


def test_a_possible_finding_says_so():
    """'EngineArgs' without AsyncEngineArgs or verl's server near it: a script of the user's own."""
    (m,) = diagnose(["AttributeError: 'EngineArgs' object has no attribute 'disable_log_requests'"], SIGNATURES).matches
    assert m.confidence == "possible" and m.headline.startswith("possibly vLLM")
    near = [
        '  File "/verl/workers/rollout/vllm_rollout/vllm_async_server.py", line 355, in init_engine',
        "AttributeError: 'EngineArgs' object has no attribute 'disable_log_requests'",
    ]
    assert diagnose(near, SIGNATURES).matches[0].confidence == "likely"


def test_a_confirming_line_after_the_hit_counts_too():
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    assert ids([oom]) == ["cuda-out-of-memory"]
    assert ids([oom, "ray::WorkerDict.actor_rollout_update_actor() -> update_policy"])[0] == "training-oom"
    far = [oom] + ["noise"] * 45 + ["update_policy"]
    assert ids(far) == ["cuda-out-of-memory"], "a line 46 lines away is not the same traceback"


def test_the_error_that_ended_the_run_outranks_the_warnings_before_it():
    log = (
        ["step:1 - actor/pg_loss:0.01"] * 5
        + [CUDA_INIT_802]
        + ["noise"] * 10
        + [
            'raise NotImplementedError(f"Reward function is not implemented for {data_source=}")',
            "NotImplementedError: Reward function is not implemented for data_source=",
        ]
    )
    d = diagnose(log, SIGNATURES)
    assert [m.signature.id for m in d.matches] == ["reward-data-source", "cuda-driver-init"]
    assert d.root is not None and d.root.line == 17 and d.matches[1].line == 6


def test_a_specific_cause_outranks_the_generic_message_printed_before_it():
    log = [
        "(raylet) A worker died or was killed while executing a task by an unexpected system error.",
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
    ]
    assert ids(log) == ["host-ram-oom", "ray-worker-died"]


def test_one_cause_in_many_processes_is_one_finding_with_its_count():
    log = [
        f"(WorkerDict pid={p}) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB."
        for p in (11, 12, 13, 14)
    ] * 2 + ['  File "/verl/verl/workers/actor/dp_actor.py", line 3, in update_policy']
    (m,) = diagnose(log, SIGNATURES).matches
    assert (m.signature.id, m.count, m.processes, m.line) == ("training-oom", 8, 4, 1)
    assert m.where == "line 1; 8 lines in 4 processes"


def test_a_generic_oom_explained_by_a_confirmed_specific_one_is_not_listed_twice():
    log = [
        '  File "/verl/verl/workers/actor/dp_actor.py", line 266, in _forward_micro_batch',
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 13.91 GiB.",
    ]
    assert ids(log) == ["training-oom"]


@pytest.mark.parametrize(
    "line",
    [
        "WARNING 11-22 23:54:11 [cuda.py:45] Failed to import from vllm._qutlass_C: "
        "ModuleNotFoundError(\"No module named 'vllm._qutlass_C'\")",
        "UserWarning: torchtitan engine is not available: ModuleNotFoundError(\"No module named 'torchtitan'\")",
        '(WorkerDict pid=2758)   warnings.warn(f"veomni engine is not available: {e!r}", stacklevel=1)',
        "INFO 12-21 14:02:11 [default_loader.py:267] Loading weights took 4.52 seconds",
    ],
)
def test_the_noise_of_a_healthy_vllm_run_matches_nothing(line):
    assert ids([line]) == []


def _all_findings() -> list[list[tuple[str, int, int, str]]]:
    import corpus_score

    return [
        [(m.signature.id, m.line, m.count, m.confidence) for m in diagnose(e.lines, SIGNATURES).matches]
        for e in corpus_score.load()
    ]


def test_the_anchor_screen_finds_what_trying_every_signature_on_every_line_finds(monkeypatch):
    from patchctl.doctor import scan

    screened = _all_findings()
    monkeypatch.setattr(scan, "anchor", lambda pattern: ("", False))  # no anchors: brute force
    assert _all_findings() == screened


def test_the_anchor_comparison_catches_a_wrong_anchor(monkeypatch):
    from patchctl.doctor import scan

    screened = _all_findings()
    real = scan.anchor
    monkeypatch.setattr(scan, "anchor", lambda pattern: (real(pattern)[0] + "~", real(pattern)[1]))
    assert _all_findings() != screened
