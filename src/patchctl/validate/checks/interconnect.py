"""The ``interconnect`` check: all-reduce busbw within each node, across each pair, and the whole
cluster (issue 22 req 1), before Ray starts, over the run's ssh connections.

The head's host side opens the rendezvous store and announces its port; then every host starts
its ranks (host/allreduce.py). What comes back is judged here: each group against the public
figure for what it runs on (:mod:`expected`) or the config's, and against its peers; a slow node
is the one every slow pair shares. Each finding names the node or pair and the likely cause.
"""

from __future__ import annotations

import queue
from dataclasses import dataclass, field
from typing import Any

from patchctl.remote import ssh
from patchctl.validate import plan as planning
from patchctl.validate import remote
from patchctl.validate.checks.settings import Settings
from patchctl.validate.errors import HealthCheckFailed
from patchctl.validate.host import allreduce
from patchctl.validate.host.allreduce import SLOW_ENV
from patchctl.validate.model import HostPreflight


@dataclass(frozen=True)
class Group:
    #: node / pair / cluster
    kind: str
    #: the hosts it spans, by label
    hosts: tuple[str, ...]
    ranks: int
    #: GB/s at the largest message size measured
    busbw: float
    #: per size: bytes, seconds, algbw, busbw
    sizes: tuple[dict[str, Any], ...]
    expected: float | None = None
    source: str = ""
    #: pass / warn / fail
    status: str = "pass"
    note: str = ""


@dataclass(frozen=True)
class Interconnect:
    backend: str
    groups: tuple[Group, ...]
    #: one line per node or pair named, with the likely cause
    findings: tuple[str, ...] = ()
    #: host -> what it reported: watched variables, GPU topology, InfiniBand ports
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def failed(self) -> tuple[Group, ...]:
        return tuple(g for g in self.groups if g.status == "fail")


def sizes(s: Settings) -> list[int]:
    out, size = [], s.allreduce_min_bytes
    while size < s.allreduce_max_bytes:
        out.append(size)
        size *= 4
    return [*out, s.allreduce_max_bytes]


def measure(
    plan: planning.Plan, masters: list[ssh.Master], preflight: tuple[HostPreflight, ...]
) -> tuple[str, list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Start every host's ranks; ``(backend, groups, host info)`` as they reported them."""
    s = plan.cluster.health
    gpus = [p.gpus for p in preflight]
    backend = "nccl" if all(gpus) else "gloo"
    counts = gpus if backend == "nccl" else [1] * len(gpus)
    starts = [sum(counts[:i]) for i in range(len(counts))]
    node_ranks = [list(range(a, a + c)) for a, c in zip(starts, counts, strict=True)]
    request: dict[str, Any] = {
        "node_ranks": node_ranks,
        "master": preflight[0].address,
        "backend": backend,
        "sizes": sizes(s),
        "warmup": s.allreduce_warmup,
        "iters": s.allreduce_iters,
        "world": sum(counts),
        # each round's share of the bound; the rest is for starting the ranks (torch, NCCL set-up)
        "budget": s.interconnect_seconds * 0.6 / max(1, len(allreduce.rounds(node_ranks))),
        "timeout": s.interconnect_seconds + 60,
    }
    wait = s.interconnect_seconds + 90.0
    sessions: list[remote.Session] = []
    try:
        for node, master in zip(plan.nodes, masters, strict=True):
            sessions.append(
                remote.Session(plan.cluster, node, "allreduce", {**request, "node": node.index}, master.socket)
            )
            if node.index == 0:
                request["port"] = _answer(sessions[0], "store", wait)["port"]
        info = {n.label: _answer(x, "host", wait) for n, x in zip(plan.nodes, sessions, strict=True)}
        replies = [(n.label, _answer(x, "reply", wait)) for n, x in zip(plan.nodes, sessions, strict=True)]
    finally:
        for x in sessions:
            x.close(wait=10)
    broken = [(label, r["error"]) for label, r in replies if r.get("error")]
    if broken:
        raise HealthCheckFailed(
            "interconnect",
            broken[0][0],
            f"the all-reduce ranks failed ({broken[0][1]})",
            f"run with NCCL_DEBUG=INFO in clusters.{plan.cluster.name}.env to see why",
        )
    return backend, [g for _, r in replies for g in r["groups"]], info


def _answer(session: remote.Session, name: str, timeout: float) -> dict[str, Any]:
    label = session.node.label
    try:
        event = session.until([name, "error"], timeout)
    except remote.Ended as exc:
        _, problem, fix = remote.failure(session.cluster, session.node, exc.returncode, exc.stderr)
        raise HealthCheckFailed("interconnect", label, problem, fix) from None
    except queue.Empty:
        raise HealthCheckFailed(
            "interconnect",
            label,
            f"no answer within {timeout:.0f} s",
            "check the host's load and that the hosts reach the head's address",
        ) from None
    if event.get("event") == "error":
        error = str(event["error"])
        fix = f"install torch in {session.cluster.python} there" if "torch" in error else "see the error"
        raise HealthCheckFailed("interconnect", label, error, fix)
    return event


def _causes(kind: str, hosts: tuple[str, ...], info: dict[str, dict[str, Any]]) -> str:
    """The likely causes, from what the hosts reported (the issue's list)."""
    out = []
    for h in hosts:
        env, topo = info.get(h, {}).get("env", {}), info.get(h, {}).get("topology", "")
        if env.get(SLOW_ENV):
            out.append(f"{h}: the test's injected slow link ({SLOW_ENV}={env[SLOW_ENV]})")
        if kind == "node":
            if env.get("NCCL_P2P_DISABLE") == "1":
                out.append(f"{h}: P2P disabled (NCCL_P2P_DISABLE=1)")
            if env.get("NCCL_NVLS_ENABLE") == "0":
                out.append(f"{h}: NVLink multicast off (NCCL_NVLS_ENABLE=0; expected figures assume it off)")
            if topo and not any(t.startswith("NV") for t in topo.split(", ")):
                out.append(f"{h}: GPUs connected over PCIe only (nvidia-smi topo: {topo})")
        else:
            ifname = env.get("NCCL_SOCKET_IFNAME") or env.get("GLOO_SOCKET_IFNAME")
            out.append(f"{h}: interface {ifname}" if ifname else f"{h}: no ifname set (NCCL/gloo pick an interface)")
            down = [n["name"] for n in info.get(h, {}).get("nics", []) if "ACTIVE" not in n.get("state", "")]
            if down:
                out.append(f"{h}: InfiniBand port(s) not active: {', '.join(down)}")
            nics = info.get(h, {}).get("nics", [])
            rates = sorted({n.get("rate", "") for n in nics if "ACTIVE" in n.get("state", "")})
            if len(rates) > 1 or (rates and "NDR" not in rates[0]):
                out.append(f"{h}: InfiniBand ports at {', '.join(rates)}")  # a slower or mixed-speed NIC
            if env.get("NCCL_IB_DISABLE") == "1":
                out.append(f"{h}: InfiniBand disabled (NCCL_IB_DISABLE=1)")
    return "; ".join(out) or "none reported by the hosts"
