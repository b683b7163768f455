"""``form``: on the head, wait until Ray lists every expected node with its GPUs, then look at
each node's GPUs from inside Ray.

It connects to the run's cluster as a Ray driver once and polls the GCS's node table
(``ray.nodes()``) every 0.1 s — Ray's own state, never a fixed sleep — reporting each node as
it appears (a node validate started is known by its own resource, see census.py), until all are
there or the timeout passes. Then one task per node, pinned to it and holding all its GPUs,
reports what a rank there sees: ``CUDA_VISIBLE_DEVICES``, the physical GPUs behind it
(nvidia-smi's UUIDs) and the variables the run must carry there. Meanwhile two strangers without
the token try the GCS (authprobe.py), and the node table is read once more for nodes that are
not the run's own; the reply carries both findings, and patchctl judges them.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from patchctl.validate.host import authprobe, census

#: variables a rank on every node must see as the cluster config set them
WATCHED_ENV = (
    "CUDA_VISIBLE_DEVICES",
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
    "NCCL_SOCKET_IFNAME",
    "GLOO_SOCKET_IFNAME",
    # Slurm's gres/gpu sets it beside CUDA_VISIBLE_DEVICES; verl's workers refuse the two together
    "ROCR_VISIBLE_DEVICES",
)


def smi_rows(query: str, fields: int) -> list[list[str]]:
    """The rows of one ``nvidia-smi --query-...`` in CSV, each ``fields`` stripped cells (the last
    keeps any further commas); [] without nvidia-smi, on its failure, or for a short row."""
    try:
        done = subprocess.run(
            ["nvidia-smi", query, "--format=csv,noheader"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode != 0:
        return []
    rows = [[c.strip() for c in line.split(",", fields - 1)] for line in done.stdout.splitlines() if line.strip()]
    return [r for r in rows if len(r) == fields]


def gpu_table() -> list[list[str]]:
    """``[index, uuid, name]`` per GPU of the machine (nvidia-smi ignores CUDA_VISIBLE_DEVICES)."""
    return smi_rows("--query-gpu=index,uuid,name", 3)


def visible(table: list[list[str]], cvd: str | None) -> list[list[str]]:
    """The rows behind ``CUDA_VISIBLE_DEVICES`` (indices or UUIDs), in its order, repeats kept:
    a value such as ``0,0`` is two ranks on one GPU."""
    if cvd is None:
        return list(table)
    out = []
    for token in (t.strip() for t in cvd.split(",") if t.strip()):
        row = next(
            (r for r in table if r[0] == token or r[1] == token or (len(token) > 4 and r[1].startswith(token))), None
        )
        out.append(row or [token, f"unknown:{token}", "?"])
    return out


def probe_node(keys: tuple[str, ...]) -> dict[str, Any]:
    import ray

    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    rows = visible(gpu_table(), cvd) if ray.get_gpu_ids() else []
    return {
        "address": ray.util.get_node_ip_address(),
        "cuda_visible_devices": cvd,
        "uuids": [r[1] for r in rows],
        "names": [r[2] for r in rows],
        "env": {k: os.environ.get(k) for k in keys},
        "host": os.uname().nodename,
    }


#: the strangers authprobe started, stopped with this side when patchctl leaves
_children: list[subprocess.Popen[str]] = []


def _end_with_caller() -> None:
    """Exit as soon as patchctl closes stdin (Ctrl-C, a failed host, its own teardown).

    This side reads nothing after its request, and ``ray.init`` or the wait for the nodes can
    block for minutes against a GCS that teardown is stopping: without this it outlived the run
    it served, a Ray driver left on the head after patchctl had reported everything stopped."""
    fd = sys.stdin.fileno()
    try:
        while os.read(fd, 4096):
            pass
    except OSError:
        pass
    for p in _children:
        if p.poll() is None:
            p.kill()
    os._exit(0)


def run(request: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> int:
    threading.Thread(target=_end_with_caller, name="form-caller", daemon=True).start()
    os.environ.update(request.get("ray_auth", {}))  # before Ray reads its config
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    t0 = time.monotonic()
    expected: dict[str, int] = {e["address"]: int(e["gpus"]) for e in request["expected"]}
    ray.init(address=request["gcs"], log_to_driver=False, logging_level=logging.ERROR, configure_logging=False)
    seen: dict[str, dict[str, Any]] = {}
    deadline = t0 + float(request["timeout"])
    while True:
        nodes = ray.nodes()
        for e in request["expected"]:
            n = next((n for n in nodes if n.get("Alive") and _is(n, e)), None)
            ip = e["address"]
            if n is not None and ip not in seen and n["Resources"].get("GPU", 0) >= expected[ip]:
                seen[ip] = n
                emit(
                    {
                        "event": "joined",
                        "address": ip,
                        "gpus": int(n["Resources"].get("GPU", 0)),
                        "at": round(time.monotonic() - t0, 3),
                    }
                )
        if len(seen) == len(expected):
            break
        if time.monotonic() > deadline:
            emit(
                {
                    "event": "timeout",
                    "missing": sorted(set(expected) - set(seen)),
                    "waited": round(time.monotonic() - t0, 1),
                }
            )
            ray.shutdown()
            return 0
        time.sleep(0.1)
    strangers = authprobe.start(request["gcs"])
    _children.extend(strangers.values())
    task = ray.remote(probe_node)
    refs = [
        task.options(
            num_cpus=0,
            num_gpus=expected[ip],
            scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False),
        ).remote(WATCHED_ENV)
        for ip, n in seen.items()
    ]
    try:
        probed = ray.get(refs, timeout=float(request.get("probe_timeout", 120)))
        auth = authprobe.verdicts(strangers)
        extra = census.foreign(
            ray.nodes(),
            [e["resource"] for e in request["expected"] if e.get("resource")],
            [e["address"] for e in request["expected"] if not e.get("resource")],
        )
    finally:
        for p in strangers.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        ray.shutdown()
    emit(
        {"event": "reply", "nodes": probed, "auth": auth, "foreign": extra, "seconds": round(time.monotonic() - t0, 3)}
    )
    return 0


def _is(node: dict[str, Any], expected: dict[str, Any]) -> bool:
    """The node validate started (its own resource), or the one it joined (its address)."""
    if expected.get("resource"):
        return expected["resource"] in node.get("Resources", {})
    return bool(node.get("NodeManagerAddress") == expected["address"])
