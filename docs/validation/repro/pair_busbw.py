"""All-reduce bus bandwidth of every pair of this machine's GPUs (NCCL through torch.distributed).

One pair at a time, two processes; 256 MiB of float32, 5 warm-up and 20 timed all-reduces;
busbw = bytes x 2(n-1)/n / time, as nccl-tests reports it (n = 2: the algorithm bandwidth).
"""

from __future__ import annotations

import itertools
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

BYTES = 256 << 20


def worker(rank: int, pair: tuple[int, int], port: int, out: mp.Queue[float]) -> None:
    torch.cuda.set_device(pair[rank])
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    x = torch.ones(BYTES // 4, device="cuda")
    for _ in range(5):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(20):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t) / 20
    if rank == 0:
        out.put(BYTES * 2 * (2 - 1) / 2 / dt / 1e9)
    dist.destroy_process_group()


def main() -> int:
    n = torch.cuda.device_count()
    print(f"{n} GPUs: {[torch.cuda.get_device_name(i) for i in range(n)]}; NCCL {torch.cuda.nccl.version()}")
    ctx = mp.get_context("spawn")
    print("| pair | busbw GB/s |\n|---|---|")
    for k, pair in enumerate(itertools.combinations(range(n), 2)):
        q = ctx.Queue()
        procs = [ctx.Process(target=worker, args=(r, pair, 29500 + k, q)) for r in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        print(f"| GPU{pair[0]}-GPU{pair[1]} | {q.get(timeout=5):.1f} |" if not q.empty() else f"| {pair} | failed |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    sys.exit(main())
