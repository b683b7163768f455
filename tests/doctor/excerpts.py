"""Realistic log excerpts, one per signature: what the failure looks like in a verl run's output
(Ray's worker prefixes, the traceback around the line, the lines before and after)."""

EXCERPTS: dict[str, str] = {
    "vllm-disable-log-requests": """\
(AgentLoopWorker pid=48213) INFO 12-02 10:14:07 [__init__.py:216] Automatically detected platform cuda.
(vLLMHttpServer pid=48771) Traceback (most recent call last):
(vLLMHttpServer pid=48771)   File "/root/verl_Uky/verl/workers/rollout/vllm_rollout/vllm_async_server.py", line 355, in init_engine
(vLLMHttpServer pid=48771)     disable_log_requests=engine_args.disable_log_requests,
(vLLMHttpServer pid=48771) AttributeError: 'AsyncEngineArgs' object has no attribute 'disable_log_requests'
""",
    "triton-cannot-find-lcuda": """\
  File "/usr/local/lib/python3.10/dist-packages/triton/runtime/build.py", line 48, in _build
    ret = subprocess.check_call(cc_cmd)
/usr/bin/ld: cannot find -lcuda: No such file or directory
collect2: error: ld returned 1 exit status
""",
    "linker-cannot-find-file": """\
(TaskRunnerV1 pid=9571) /usr/bin/ld: cannot find /lib/x86_64-linux-gnu/libc.so.6: No such file or directory
(TaskRunnerV1 pid=9571) collect2: error: ld returned 1 exit status
""",
    "vllm-backend-not-registered": """\
(WorkerDict pid=3114) INFO 12-20 08:01:44 [cuda.py:362] Using backend TORCH_SDPA from VLLM_ATTENTION_BACKEND
(WorkerDict pid=3114)   File "/usr/local/lib/python3.12/dist-packages/vllm/attention/backends/registry.py", line 94, in get_path
(WorkerDict pid=3114)     raise ValueError(
(WorkerDict pid=3114) ValueError: Backend TORCH_SDPA must be registered before use. Use register_backend(Backend.TORCH_SDPA, 'your.module.YourClass')
""",
    "vllm-unknown-backend": """\
(WorkerDict pid=902) ValueError: Unknown attention backend: 'XFORMERS'. Valid options are: FLASH_ATTN, TRITON_ATTN, ROCM_ATTN, FLASHINFER
""",
    "slow-model-loading": """\
(WorkerDict pid=2210) INFO 12-21 14:02:11 [default_loader.py:267] Loading weights took 1834.52 seconds
(WorkerDict pid=2210) INFO 12-21 14:02:12 [gpu_model_runner.py:2653] Model loading took 7.1557 GiB and 1840.115206 seconds
""",
    "ray-register-worker": """\
[2025-06-20 10:01:33,412 E 18811 18811] core_worker.cc:513: Failed to register worker 01000000ffffffffffffffffffffffffffffffffffffffffffffffff to Raylet. IOError: [RayletClient] Unable to register worker with raylet. No such file or directory
""",
    "tensordict-membership": """\
  File "/root/verl_Uky/verl/protocol.py", line 310, in __getitem__
    if key in self.batch:
NotImplementedError: TensorDict does not support membership checks with the `in` keyword. If you want to check if a particular key is in your TensorDict, please use `key in tensordict.keys()` instead.
""",
    "cuda-illegal-memory-access": """\
(WorkerDict pid=7781) RuntimeError: CUDA error: an illegal memory access was encountered
(WorkerDict pid=7781) CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
(WorkerDict pid=7781) For debugging consider passing CUDA_LAUNCH_BLOCKING=1
""",
    "triton-compile-module": """\
  File "/data/lbh/conda_envs/verl/lib/python3.10/site-packages/triton/backends/nvidia/driver.py", line 80, in __init__
    mod = compile_module_from_src(Path(os.path.join(dirname, "driver.c")).read_text(), "cuda_utils")
  File "/data/lbh/conda_envs/verl/lib/python3.10/site-packages/triton/backends/nvidia/driver.py", line 57, in compile_module_from_src
    so = _build(name, src_path, tmpdir, library_dirs(), include_dir, libraries)
subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/tmpx1/main.c', '-O3', '-shared', '-fPIC']' returned non-zero exit status 1.
""",
    "nccl-system-error": """\
torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2615, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.24.3
ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.
""",
    "nccl-timeout": """\
(WorkerDict pid=5521) [rank3]:[E1221 03:12:09.118410 5521 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1182, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600089 milliseconds before timing out.
""",
    "duplicate-gpu": """\
(WorkerDict pid=1200) torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5
(WorkerDict pid=1200) ncclInvalidUsage: This usually reflects invalid usage of NCCL library.
(WorkerDict pid=1200) Last error:
(WorkerDict pid=1200) Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000
""",
    "ray-object-store-tmp": """\
2025-12-21 09:00:01,221 WARNING services.py:2152 -- WARNING: The object store is using /tmp instead of /dev/shm because /dev/shm has only 67108864 bytes available. This will harm performance! You may be able to free up space by deleting files in /dev/shm. If you are inside a Docker container, you can increase /dev/shm size by passing '--shm-size=10.24gb' to 'docker run' (or add it to the run_options list in a Ray cluster config). Make sure to set this to more than 30% of available RAM.
""",
    "flash-attn-undefined-symbol": """\
  File "/usr/local/lib/python3.10/dist-packages/flash_attn/flash_attn_interface.py", line 10, in <module>
    import flash_attn_2_cuda as flash_attn_gpu
ImportError: /usr/local/lib/python3.10/dist-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE
""",
    "flash-attn2-not-installed": """\
(WorkerDict pid=4411) ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the following error: the package flash_attn seems to be not installed. Please refer to the documentation of https://huggingface.co/docs/transformers/perf_infer_gpu_one#flashattention-2 to install Flash Attention 2.
""",
    "placement-group-pending": """\
(autoscaler +1m2s) Warning: The following resource request cannot be scheduled right now: {'GPU': 1.0, 'CPU': 1.0}. This is likely due to all cluster resources being claimed by actors. Consider creating fewer actors or increasing the resources available to this Ray cluster.
""",
    "cuda-out-of-memory": """\
(WorkerDict pid=812) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.31 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.02 GiB is free.
""",
    "pthread-create-failed": """\
OpenBLAS blas_thread_init: pthread_create failed for thread 31 of 64: Resource temporarily unavailable
""",
    "too-many-open-files": """\
OSError: [Errno 24] Too many open files: '/tmp/ray/session_2025-12-21_09-00-00_000000_1/logs'
""",
    "transformers-too-new": """\
  File "/tmp/verl/verl/utils/model.py", line 30, in <module>
    from transformers import (
ImportError: cannot import name 'AutoModelForVision2Seq' from 'transformers' (/opt/torch/.venv/lib/python3.12/site-packages/transformers/__init__.py)
""",
    "slurm-time-limit": """\
step:212 - critic/score/mean:np.float64(0.3871) - actor/pg_loss:-2.1200 - timing_s/step:0.500
slurmstepd-n2: error: *** STEP 2.1 ON n2 CANCELLED AT 2026-11-28T17:03:08 DUE TO TIME LIMIT ***
slurmstepd-n1: error: *** JOB 2 ON n1 CANCELLED AT 2026-11-28T17:03:08 DUE TO TIME LIMIT ***
srun: Job step aborted: Waiting up to 4 seconds for job step to finish.
srun: error: n2: task 0: Exited with exit code 143
""",
    "slurm-node-failure": """\
step:37 - critic/score/mean:np.float64(0.1493) - actor/pg_loss:-0.3700 - timing_s/step:0.500
srun: error: Node failure on n2
slurmstepd-n1: error: *** JOB 4 ON n1 CANCELLED AT 2026-11-28T17:04:16 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***
srun: Job step aborted: Waiting up to 4 seconds for job step to finish.
srun: error: Timed out waiting for job step to complete
""",
}

#: a healthy run's output, which must match nothing
CLEAN = """\
2025-12-21 09:00:01,221 INFO worker.py:1942 -- Started a local Ray instance.
(TaskRunner pid=4100) step:1 - actor/entropy:2.31 - actor/pg_loss:0.012 - critic/score/mean:0.018
(TaskRunner pid=4100) step:2 - actor/entropy:2.29 - actor/pg_loss:0.010 - critic/score/mean:0.052
(WorkerDict pid=2210) INFO 12-21 14:02:11 [default_loader.py:267] Loading weights took 4.52 seconds
(WorkerDict pid=2210) INFO Graph capturing finished in 12 secs, took 0.52 GiB
Training finished.
"""
