"""Stand-in for ``python -m verl.trainer.main_ppo`` on CPU, for patchctl validate's tests.

Like verl it reads hydra-style ``key=value`` overrides, joins the running Ray cluster with
``ray.init(num_cpus=ray_kwargs.ray_init.num_cpus)`` (Ray refuses num_cpus when joining, as for
verl), checks that the cluster has ``trainer.nnodes`` nodes, runs one task on each node holding
``trainer.n_gpus_per_node`` GPUs, and prints verl's console-logger step lines. Test knobs:
``+standin.fail_at=N`` dies at step N with a CUDA error doctor knows; ``+standin.step_seconds=S``;
``+standin.weights=MODE`` syncs weights to an engine actor on the last node (see ``_weights``).
``+standin.hang_at=N`` calls a reward function that never returns at step N (a run that stops making
progress without an error); ``+standin.peer_hang_at=N`` waits at step N for a task on the last node
that never returns (``hold_peer``: the hang is on another host than the driver's).
``+standin.peer_dump=FILE`` / ``+standin.driver_dump=FILE``: ``hold_peer`` (as rank 1) and the driver
(as rank 0) play the NCCL flight recorder's watchdog where their environment turns it on
(``TORCH_NCCL_DEBUG_INFO_PIPE_FILE``): they listen on ``PREFIX<rank>.pipe`` and, on a byte there, write
FILE (a real dump) to ``TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank>``, as torch's watchdog does.
"""

import os
import sys
import time


def compute_reward():
    while True:  # the planted hang: a reward function that never returns
        time.sleep(0.05)


def flight_watchdog(dump, rank):
    """torch's watchdog for ``rank``, in a thread: make the pipe, and on a byte write ``dump`` to the
    dump file. Nothing where the process's environment has the flight recorder off."""
    import threading

    pipe, out = os.environ.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE"), os.environ.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
    if not dump or not pipe or not out:
        return
    pipe = f"{pipe}{rank}.pipe"
    os.mkfifo(pipe)

    def serve():
        fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
        while True:
            try:
                got = os.read(fd, 16)
            except BlockingIOError:
                got = b""
            if got:
                with open(dump, "rb") as f:
                    data = f.read()
                with open(f"{out}{rank}.tmp", "wb") as f:
                    f.write(data)
                os.replace(f"{out}{rank}.tmp", f"{out}{rank}")
            time.sleep(0.05)

    threading.Thread(target=serve, daemon=True).start()


def hold_peer(dump=""):
    flight_watchdog(dump, 1)
    while True:  # the planted hang on another host: a rank that never reaches the collective
        time.sleep(0.05)


def main(argv):
    cfg = {}
    for a in argv:
        key, _, value = a.lstrip("+~").partition("=")
        cfg[key] = value
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    num_cpus = cfg.get("ray_kwargs.ray_init.num_cpus", "null")
    ray.init(num_cpus=None if num_cpus in ("null", "None") else int(num_cpus), log_to_driver=False)
    print("Connected to Ray cluster", flush=True)
    nnodes, gpus = int(cfg["trainer.nnodes"]), int(cfg["trainer.n_gpus_per_node"])
    nodes = [n for n in ray.nodes() if n["Alive"]]
    print(f"(TaskRunner pid={os.getpid()}) TaskRunner hostname: {os.uname().nodename}, {len(nodes)} nodes", flush=True)
    if len(nodes) != nnodes:
        raise SystemExit(f"trainer.nnodes={nnodes} but Ray has {len(nodes)} nodes")

    @ray.remote(num_cpus=0)
    def where():
        import verl.utils.standin_mark  # noqa: F401  (a module a code patch may edit; see test_validate_codehook)

        keys = ("CUDA_VISIBLE_DEVICES", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")
        return ray.util.get_node_ip_address(), {k: os.environ.get(k) for k in keys}

    refs = [
        where.options(
            num_gpus=gpus, scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
        ).remote()
        for n in nodes
    ]
    for ip, env in sorted(ray.get(refs, timeout=120)):
        print(
            f"(WorkerDict pid={os.getpid()}) rank on {ip}: " + " ".join(f"{k}={v}" for k, v in env.items()), flush=True
        )
    sync = _weights(cfg, nodes) if "standin.weights" in cfg else None
    total = int(cfg.get("trainer.total_training_steps", "40"))
    fail_at = int(cfg.get("standin.fail_at", "0"))
    hang_at = int(cfg.get("standin.hang_at", "0"))
    peer_hang_at = int(cfg.get("standin.peer_hang_at", "0"))
    flight_watchdog(cfg.get("standin.driver_dump", ""), 0)
    pause = float(cfg.get("standin.step_seconds", "0.02"))
    print(f"Total training steps: {total}", flush=True)
    print("Training from scratch", flush=True)
    for step in range(1, total + 1):
        if sync is not None and step <= 4:
            sync(step)
        time.sleep(pause)
        if step == hang_at:
            compute_reward()
        if step == peer_hang_at:
            here = ray.util.get_node_ip_address()
            other = next((n for n in nodes if n["NodeManagerAddress"] != here), nodes[-1])
            peer = ray.remote(num_cpus=0)(hold_peer).options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(other["NodeID"], soft=False)
            )
            ray.get(peer.remote(cfg.get("standin.peer_dump", "")))
        if step == fail_at:
            print("RuntimeError: CUDA error: an illegal memory access was encountered", flush=True)
            sys.exit(1)
        reward = 0.1 + 0.8 * step / total
        print(
            f"step:{step} - critic/score/mean:np.float64({reward:.4f}) - actor/pg_loss:{-0.01 * step:.4f} - "
            f"timing_s/step:{pause:.3f}",
            flush=True,
        )
    ray.shutdown()


def _weights(cfg, nodes):
    """``+standin.weights=MODE``: a torch-free weight sync before each of the first 4 steps, from this
    driver (the trainer's side) to an engine actor on the last node (its side), through the
    stand-in's verl.workers.rollout.vllm_rollout (MODE: healthy, partial, some, names)."""
    import asyncio

    import numpy as np
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from verl.workers.rollout.vllm_rollout.bucketed_weight_transfer import BucketedWeightSender

    rng = np.random.default_rng(0)
    params = {"model.embed_tokens.weight": rng.standard_normal((50, 8)).astype("float32")}
    for i in range(2):
        for name, rows in (
            ("self_attn.q_proj", 8),
            ("self_attn.k_proj", 4),
            ("self_attn.v_proj", 4),
            ("mlp.gate_proj", 16),
            ("mlp.up_proj", 16),
        ):
            params[f"model.layers.{i}.{name}.weight"] = rng.standard_normal((rows, 8)).astype("float32")
        params[f"model.layers.{i}.mlp.down_proj.weight"] = rng.standard_normal((8, 16)).astype("float32")
    shapes = {n: p.shape for n, p in params.items()}

    @ray.remote(num_cpus=0)
    class Engine:
        def __init__(self, shapes, mode):
            from verl.workers.rollout.vllm_rollout.utils import vLLMColocateWorkerExtension

            self.worker = vLLMColocateWorkerExtension(shapes, mode)

        def load(self, weights):
            self.worker.update_weights_from_ipc(weights)
            return self.worker.syncs

    engine = Engine.options(scheduling_strategy=NodeAffinitySchedulingStrategy(nodes[-1]["NodeID"], soft=False)).remote(
        shapes, cfg["standin.weights"]
    )

    def sync(step):
        for p in params.values():  # the trainer moves: an update per step
            p += np.float32(0.01) * rng.standard_normal(p.shape).astype("float32")
        sender = BucketedWeightSender()
        asyncio.run(sender.async_send_weights(iter(list(params.items()))))
        ray.get(engine.load.remote(sender.sent), timeout=60)

    return sync


if __name__ == "__main__":
    main(sys.argv[1:])
