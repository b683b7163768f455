"""The ``storage`` check: write/read-back throughput and a checksum on every host's tree root,
data directory and checkpoint directory (issue 22 req 2), a shared directory measured once.

The host side does the measuring (host/storage.py); this side runs its three phases on every
host at once and judges the throughput against ``storage_warn_mbps`` / ``storage_fail_mbps``.
"""

from __future__ import annotations

import posixpath
import queue
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from patchctl.remote import ssh
from patchctl.validate import plan as planning
from patchctl.validate import remote
from patchctl.validate.errors import HealthCheckFailed
from patchctl.validate.model import Node


@dataclass(frozen=True)
class StorageRow:
    host: str
    #: tree / data / checkpoint
    dir: str
    path: str
    #: pass / warn / fail / shared (measured by another host)
    status: str
    write_mbps: float | None = None
    read_mbps: float | None = None
    bytes: int = 0
    method: str = ""
    #: the hosts that see the same directory (the marker files), this one included
    shared_with: tuple[str, ...] = ()
    note: str = ""


def dirs(plan: planning.Plan, node: Node) -> dict[str, str]:
    out = {"tree": node.host.root}
    if plan.cluster.paths.get("DATA_DIR"):
        out["data"] = plan.cluster.paths["DATA_DIR"]
    out["checkpoint"] = plan.cluster.health.checkpoint_dir or posixpath.join(node.host.root, "checkpoints")
    return out


def _phase(plan: planning.Plan, masters: list[ssh.Master], phase: str) -> list[dict[str, Any]]:
    s = plan.cluster.health

    def one(node: Node, master: ssh.Master) -> dict[str, Any]:
        seconds = max(60.0, s.storage_bytes / (s.storage_fail_mbps * 1e6) * 2)
        request: dict[str, Any] = {
            "dirs": dirs(plan, node),
            "run": plan.run_id,
            "node": node.index,
            "phase": phase,
            "bytes": s.storage_bytes,
            "seconds": seconds,
        }
        try:
            return remote.call(plan.cluster, node, "storage", request, timeout=seconds * 2 + 600, control=master.socket)
        except remote.Ended as exc:
            _, problem, fix = remote.failure(plan.cluster, node, exc.returncode, exc.stderr)
            raise HealthCheckFailed("storage", node.label, problem, fix) from None
        except queue.Empty:
            raise HealthCheckFailed(
                "storage",
                node.label,
                f"the {phase} phase did not answer in time",
                "check the host's disks (a hung mount?)",
            ) from None

    with ThreadPoolExecutor(max_workers=len(plan.nodes)) as pool:
        return list(pool.map(one, plan.nodes, masters))


def _judge(plan: planning.Plan, node: Node, name: str, got: dict[str, Any]) -> StorageRow:
    s = plan.cluster.health
    path = dirs(plan, node)[name]
    shared = tuple(plan.nodes[i].label for i in got.get("shared_with", []))
    if "tested_by" in got:
        return StorageRow(
            node.label,
            name,
            path,
            "shared",
            shared_with=shared,
            note=f"the same directory as on {plan.nodes[got['tested_by']].label}, measured there",
        )
    if "error" in got:
        return StorageRow(node.label, name, path, "fail", shared_with=shared, note=got["error"])
    slowest = min(got["write_mbps"], got["read_mbps"])
    status, note = "pass", ""
    if not got["checksum_ok"]:
        status, note = "fail", "the data read back differs from what was written (sha256)"
    elif slowest < s.storage_fail_mbps:
        status, note = "fail", f"below {s.storage_fail_mbps} MB/s (storage_fail_mbps)"
    elif slowest < s.storage_warn_mbps:
        status, note = "warn", f"below {s.storage_warn_mbps} MB/s (storage_warn_mbps)"
    if got.get("partial"):
        note = (note + "; " if note else "") + f"stopped at {got['bytes']} bytes (time bound)"
    return StorageRow(
        node.label,
        name,
        path,
        status,
        round(got["write_mbps"], 1),
        round(got["read_mbps"], 1),
        int(got["bytes"]),
        got["method"],
        shared,
        note,
    )


def run(plan: planning.Plan, masters: list[ssh.Master]) -> tuple[StorageRow, ...]:
    marked = _phase(plan, masters, "mark")
    try:  # a directory refused on one host: the others' markers, made already on every host, go too
        for node, reply in zip(plan.nodes, marked, strict=True):
            bad = {k: v for k, v in reply["marked"].items() if v}
            if bad:
                name, why = next(iter(bad.items()))
                raise HealthCheckFailed(
                    "storage",
                    node.label,
                    f"cannot write in the {name} directory ({why})",
                    "make it writable by the ssh user, or set another path in the cluster config",
                )
        measured = _phase(plan, masters, "measure")
    finally:
        _phase(plan, masters, "clean")
    return tuple(
        _judge(plan, node, name, got)
        for node, reply in zip(plan.nodes, measured, strict=True)
        for name, got in reply["dirs"].items()
    )
