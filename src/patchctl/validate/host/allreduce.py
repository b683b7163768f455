"""``allreduce``: this host's ranks of the cluster's all-reduce bandwidth test (issue 22 req 1).

Measured as nccl-tests' ``all_reduce_perf`` does: for each message size, warm-up iterations,
then timed ones; the time is the slowest rank's, ``algbw = bytes / time`` and
``busbw = algbw * 2(n-1)/n``, the figure comparable across rank counts (nccl-tests'
doc/PERFORMANCE.md). torch.distributed with NCCL where the host has GPUs (one rank per GPU),
gloo where it has none (one rank). The head's process holds the rendezvous store (a port the
OS picks, announced to patchctl, which passes it to the other hosts).

The groups run in rounds, every rank in every round so all agree on the group order torch
needs: each node's own GPUs at once; then each pair of nodes, the pairs of a round disjoint (the
circle method: n-1 rounds for n nodes); then the whole cluster when it has more than two nodes
(with two, the one pair is the whole cluster). The ranks are killed at the time bound, or as
soon as patchctl closes this action's stdin (it gave up on the run). A single node of one GPU still runs its one rank:
busbw is 0 by definition there, but NCCL's set-up and a correct all-reduce are proven, and algbw
is reported. A group's first rank reports its result.
"""

from __future__ import annotations

import datetime
import multiprocessing
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

#: test-only: seconds every rank on this host sleeps per timed iteration, the CPU stand-in for a
#: host whose link ``tc`` would slow (tests/validate/test_validate_health.py); reported when set
SLOW_ENV = "PATCHCTL_TEST_SLOW_ALLREDUCE"
#: the variables that decide how NCCL and gloo connect: reported, as the likely cause of a slow link
WATCHED = (
    "NCCL_SOCKET_IFNAME",
    "GLOO_SOCKET_IFNAME",
    "NCCL_IB_HCA",
    "NCCL_IB_DISABLE",
    "NCCL_P2P_DISABLE",
    "NCCL_P2P_LEVEL",
    "NCCL_SHM_DISABLE",
    "NCCL_NVLS_ENABLE",
    "NCCL_NET",
    "CUDA_VISIBLE_DEVICES",
    SLOW_ENV,
)


def rounds(node_ranks: list[list[int]]) -> list[list[tuple[str, str, list[int]]]]:
    """Every group, as rounds of disjoint ``(kind, label, ranks)``; the same on every rank."""
    n = len(node_ranks)
    out = [[("node", str(i), r) for i, r in enumerate(node_ranks) if len(r) > 1 or n == 1]]
    order: list[int | None] = list(range(n)) + ([None] if n % 2 else [])
    for _ in range(len(order) - 1 if n > 1 else 0):
        pairs = [(order[i], order[-1 - i]) for i in range(len(order) // 2)]
        out.append(
            [
                ("pair", f"{min(a, b)}-{max(a, b)}", node_ranks[min(a, b)] + node_ranks[max(a, b)])
                for a, b in pairs
                if a is not None and b is not None
            ]
        )
        order = [order[0], order[-1], *order[1:-1]]
    if n > 2:
        out.append([("cluster", "all", [r for ranks in node_ranks for r in ranks])])
    return [r for r in out if r]


def _sweep(torch: Any, dist: Any, group: Any, n: int, device: Any, args: dict[str, Any]) -> dict[str, Any]:
    slow = float(os.environ.get(SLOW_ENV) or 0)
    check = torch.ones(1024, dtype=torch.float32, device=device)
    dist.all_reduce(check, group=group)
    out: dict[str, Any] = {"n": n, "correct": bool((check == n).all().item()), "sizes": [], "stopped_early": False}
    spent = 0.0
    for size in args["sizes"]:
        buf = torch.zeros(max(1, size // 4), dtype=torch.float32, device=device)
        for _ in range(args["warmup"]):
            dist.all_reduce(buf, group=group)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        for _ in range(args["iters"]):
            dist.all_reduce(buf, group=group)
            if slow:
                time.sleep(slow)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        took = torch.tensor([(time.perf_counter() - t0) / args["iters"]], dtype=torch.float64, device=device)
        dist.all_reduce(took, op=dist.ReduceOp.MAX, group=group)  # the slowest rank's time, as nccl-tests
        seconds = float(took.item())
        algbw = buf.numel() * 4 / seconds / 1e9
        out["sizes"].append(
            {
                "bytes": buf.numel() * 4,
                "seconds": seconds,
                "algbw": round(algbw, 3),
                "busbw": round(algbw * 2 * (n - 1) / n, 3),
            }
        )
        spent += seconds * (args["iters"] + args["warmup"])  # the same on every rank: all stop together
        if spent > args["budget"]:
            out["stopped_early"] = size != args["sizes"][-1]
            break
    out["busbw"] = out["sizes"][-1]["busbw"] if out["sizes"] else 0.0
    return out


def rank_main(args: dict[str, Any], rank: int, local: int, results: Any) -> None:
    """One rank (a spawned process): join, run every round, report the groups it leads."""
    import torch
    import torch.distributed as dist

    timeout = datetime.timedelta(seconds=args["timeout"])
    device = torch.device("cpu")
    if args["backend"] == "nccl":
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
    store = dist.TCPStore(args["master"], args["port"], is_master=False, timeout=timeout)
    dist.init_process_group(args["backend"], store=store, rank=rank, world_size=args["world"], timeout=timeout)
    try:
        schedule = rounds(args["node_ranks"])
        groups = {label: dist.new_group(ranks) for r in schedule for _, label, ranks in r}
        for r in schedule:
            for kind, label, ranks in r:
                if rank in ranks:
                    result = _sweep(torch, dist, groups[label], len(ranks), device, args)
                    if rank == min(ranks):
                        results.put({"kind": kind, "label": label, "ranks": ranks, **result})
            dist.barrier()
    finally:
        dist.destroy_process_group()


def topology() -> str:
    """How this host's GPUs connect (``nvidia-smi topo -m``): NVLink (NV#) or PCIe/SMP only."""
    try:
        done = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return parse_topology(done.stdout)


def parse_topology(text: str) -> str:
    """The distinct GPU-to-GPU link kinds of a ``nvidia-smi topo -m`` matrix, e.g. "NV18".

    Only the GPU columns count: on a node with NICs the GPU rows go on with GPU-to-NIC cells (PIX,
    SYS), which would make an all-NVLink node look partly PCIe and hide its NVLink figure."""
    lines = text.splitlines()
    header = next((line.split() for line in lines if line.split()[:1] == ["GPU0"]), [])
    gpus = [i for i, name in enumerate(header) if name.startswith("GPU") and name[3:].isdigit()]
    cells = []
    for line in lines:
        row = line.split()
        if row and row[0].startswith("GPU") and row[0][3:].isdigit():
            # "X" (self) is one cell like the rest: the row's cells line up with the header's names
            cells += [row[1 + i] for i in gpus if 1 + i < len(row)]
    links = sorted({c for c in cells if c.startswith("NV") or c in ("SYS", "NODE", "PHB", "PXB", "PIX")})
    return ", ".join(links)


def nics(base: str = "/sys/class/infiniband") -> list[dict[str, str]]:
    """RDMA ports (``/sys/class/infiniband``): name, rate ("400 Gb/sec (4X NDR)"), state, and
    link_layer ("InfiniBand", or "Ethernet" for RoCE)."""
    out = []
    for dev in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        for port in sorted(os.listdir(os.path.join(base, dev, "ports"))):
            info = {"name": f"{dev}/{port}"}
            for key in ("rate", "state", "link_layer"):
                try:
                    with open(os.path.join(base, dev, "ports", port, key), encoding="utf-8") as f:
                        info[key] = f.read().strip()
                except OSError:
                    info[key] = ""
            out.append(info)
    return out


def ethernet(base: str = "/sys/class/net") -> list[dict[str, Any]]:
    """Physical network interfaces (those with a ``device`` link: not lo, bridges or veths) that
    are up, with their line rate in Mb/s (``speed``; the kernel refuses the read, or gives -1, where
    it does not know it)."""
    out: list[dict[str, Any]] = []
    for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        where = os.path.join(base, name)
        if not os.path.exists(os.path.join(where, "device")):
            continue
        try:
            with open(os.path.join(where, "operstate"), encoding="utf-8") as f:
                state = f.read().strip()
            with open(os.path.join(where, "speed"), encoding="utf-8") as f:
                speed = int(f.read().strip())
        except (OSError, ValueError):
            continue
        if state == "up" and speed > 0:
            out.append({"name": name, "speed": speed})
    return out


def _until_eof(gone: threading.Event) -> None:
    sys.stdin.read()
    gone.set()


def run(request: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> int:
    import torch.distributed as dist

    args = dict(request)
    node = int(args["node"])
    first = sum(len(r) for r in args["node_ranks"][:node])
    store = None
    if node == 0:  # the rendezvous: held by this process for the whole test
        store = dist.TCPStore(
            args["master"],
            0,
            is_master=True,
            wait_for_workers=False,
            timeout=datetime.timedelta(seconds=args["timeout"]),
        )
        args["port"] = store.port
        emit({"event": "store", "port": store.port})
    emit(
        {
            "event": "host",
            "env": {k: os.environ[k] for k in WATCHED if k in os.environ},
            "topology": topology(),
            "nics": nics(),
            "ethernet": ethernet(),
        }
    )
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    procs = [
        ctx.Process(target=rank_main, args=(args, first + i, i, results), daemon=True)
        for i in range(len(args["node_ranks"][node]))
    ]
    for p in procs:
        p.start()
    deadline = time.monotonic() + args["timeout"]
    groups: list[dict[str, Any]] = []
    gone = threading.Event()  # end-of-file on stdin: patchctl gave up on the run (another host failed)
    threading.Thread(target=_until_eof, args=(gone,), daemon=True).start()
    while any(p.is_alive() for p in procs) and time.monotonic() < deadline and not gone.is_set():
        try:
            groups.append(results.get(timeout=0.2))
        except queue.Empty:
            continue
    for p in procs:
        if p.is_alive():
            p.kill()
        p.join(5)
    while True:
        try:
            groups.append(results.get_nowait())
        except queue.Empty:
            break
    failed = [p.exitcode for p in procs if p.exitcode != 0]
    emit(
        {
            "event": "reply",
            "groups": groups,
            "exitcodes": [p.exitcode for p in procs],
            "error": f"{len(failed)} rank(s) ended with {failed}" if failed else "",
        }
    )
    del store
    return 0
