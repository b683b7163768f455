"""Step ``ray_up``: a Ray head on the first host, every other host joined to it, the cluster
waited for through Ray's own state, and the GPU identity check.

Each node is a ``node`` session (host/node.py) kept open until teardown. The head starts first
(the workers need its address); the workers start together as soon as it is up. The head's
``form`` session then polls Ray's node table until every host is listed with its GPUs, bounded
by ``--ray-timeout``; a host missing then is named, with the tail of its own Ray log.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import PurePosixPath
from typing import Any

from patchctl.validate import gpus, guard, remote
from patchctl.validate import plan as planning
from patchctl.validate.errors import (
    HostLost,
    HostUnreachable,
    PreflightFailed,
    RayAlreadyRunning,
    RayStartFailed,
    WorkerNeverJoined,
)
from patchctl.validate.model import HostPreflight, Node, Note, RayCluster, RayNode
from patchctl.validate.teardown import Started

NoteFn = Callable[[Note], None]


def _request(plan: planning.Plan, node: Node, pre: HostPreflight, gcs: str | None) -> dict[str, object]:
    o = plan.options
    return {
        "role": node.role,
        "address": pre.address,
        "gpus": pre.gpus,
        "port": node.host.ray_port,
        "gcs": gcs,
        "marker": plan.marker(node),
        "join": o.join,
        "num_cpus": o.num_cpus,
        "object_store_bytes": o.object_store_bytes,
        "ray_auth": plan.ray_auth,
        "lease": o.lease,
        "ceiling": plan.ceiling,
        "dashboard": o.dashboard,
        "ray_client": o.ray_client,
        # each node's workers record which patched modules they import (train/codehook.py), into
        # the run folder at this path inside that host's own tree
        "run_rel": str(PurePosixPath(plan.remote_run_dir).relative_to(plan.nodes[0].host.root)),
    }


def start_node(plan: planning.Plan, started: Started, node: Node, pre: HostPreflight, gcs: str | None) -> str:
    """Start (or join) one node; its GCS address once it is up."""
    master = started.conns.masters[node.index]
    session = started.open(
        node, lambda: remote.Session(plan.cluster, node, "node", _request(plan, node, pre, gcs), master.socket)
    )
    try:
        # a worker is judged by the head's node table (form), not by its own "up": one that never
        # joins must time out there, with its log, rather than here
        wanted = ["up"] if node.role == "head" else ["starting"]
        event = session.until([*wanted, "joined", "refused", "failed", "error"], timeout=180)
    except remote.Ended as exc:
        kind, problem, fix = remote.failure(plan.cluster, node, exc.returncode, exc.stderr)
        raise (
            HostUnreachable(node.label, "ray-up", problem)
            if kind == "unreachable"
            else RayStartFailed(node.label, f"{problem}; {fix}", "")
        ) from None
    except queue.Empty:
        raise RayStartFailed(node.label, "ray start gave no answer in 180 s", "") from None
    kind = event["event"]
    if kind == "refused" and event.get("lease"):  # another run took the GPUs since preflight (gpulease.py)
        raise PreflightFailed(node.label, "gpu_lease", event["lease"], event.get("fix", ""))
    if kind == "refused":
        raise RayAlreadyRunning(node.label, event["address"], event["pid"], event["gcs"])
    if kind == "joined":
        started.joined.add(node.index)
        return str(event["gcs"])
    if kind in ("failed", "error"):
        raise RayStartFailed(
            node.label,
            event.get("error") or f"ray start exited with {event.get('returncode')}",
            " | ".join(event.get("tail", [])[-3:]),
        )
    return gcs or f"{pre.address}:{node.host.ray_port}"


def run(plan: planning.Plan, started: Started, pre: tuple[HostPreflight, ...], note: NoteFn) -> RayCluster:
    t0 = time.monotonic()
    by_label = {p.label: p for p in pre}
    head = plan.head
    gcs = start_node(plan, started, head, by_label[head.label], None)
    note(Note("ray-up", head.label, f"head up at {gcs} ({time.monotonic() - t0:.1f} s)"))
    workers = plan.nodes[1:]
    if workers:
        with ThreadPoolExecutor(max_workers=len(workers)) as pool:
            futures = [pool.submit(start_node, plan, started, w, by_label[w.label], gcs) for w in workers]
            for f in futures:
                f.result()
    expected: list[dict[str, Any]] = [
        {
            "label": n.label,
            "address": by_label[n.label].address,
            "gpus": by_label[n.label].gpus,
            "resource": guard.resource(plan, started, n),
        }
        for n in plan.nodes
    ]
    request = {"gcs": gcs, "expected": expected, "timeout": plan.options.ray_timeout, "ray_auth": plan.ray_auth}
    form = remote.Session(plan.cluster, head, "form", request, started.conns.masters[0].socket)
    label_of: dict[str, str] = {e["address"]: e["label"] for e in expected}
    joined: dict[str, float] = {}
    deadline = time.monotonic() + plan.options.ray_timeout + 120
    try:
        while True:
            try:
                event = form.until(["joined", "timeout", "reply", "error"], timeout=0.5)
            except queue.Empty:
                _workers_alive(plan, started)  # one whose Ray already failed need not wait for the timeout
                if time.monotonic() > deadline:
                    raise RayStartFailed(head.label, "the head did not list its nodes in time", "") from None
                continue
            if event["event"] == "joined":
                joined[event["address"]] = time.monotonic() - t0
                note(
                    Note(
                        "ray-up",
                        label_of[event["address"]],
                        f"node joined with {event['gpus']} GPU(s) ({joined[event['address']]:.1f} s)",
                    )
                )
            elif event["event"] == "timeout":
                missing = label_of[event["missing"][0]]
                raise WorkerNeverJoined(
                    missing, event["missing"][0], float(event["waited"]), _tail(started, plan.nodes, missing)
                )
            elif event["event"] == "error":
                raise RayStartFailed(head.label, f"the head could not be asked for its nodes: {event['error']}", "")
            else:
                break
    except remote.Ended as exc:
        _, problem, _ = remote.failure(plan.cluster, head, exc.returncode, exc.stderr)
        raise HostLost(head.label, "ray-up", "head", problem) from None
    finally:
        form.close(wait=10)
    configured = {n.label: n for n in plan.nodes}
    nodes = tuple(
        RayNode(
            label_of[d["address"]],
            d["address"],
            len(d["uuids"]) or by_label[label_of[d["address"]]].gpus,
            round(joined.get(d["address"], 0.0), 3),
            d.get("cuda_visible_devices"),
            tuple(d["uuids"]),
            tuple(d["names"]),
            dict(d["env"]),
            configured[label_of[d["address"]]].index in started.joined,
        )
        for d in sorted(event["nodes"], key=lambda d: [e["address"] for e in expected].index(d["address"]))
    )
    auth = guard.judge(plan, event.get("auth") or {}, event.get("foreign") or [])
    gpus.check(nodes, configured)
    cluster = RayCluster(gcs, nodes, round(time.monotonic() - t0, 3), auth)
    note(
        Note(
            "ray-up",
            head.label,
            f"{cluster.nnodes} node(s), {cluster.gpus_per_node} GPU(s) each, in {cluster.seconds:.1f} s",
        )
    )
    return cluster


def _workers_alive(plan: planning.Plan, started: Started) -> None:
    """Raise for a worker whose ``ray start`` failed or whose session ended while the head waits."""
    for node in plan.nodes[1:]:
        session = started.nodes.get(node.index)
        if session is None:
            continue
        while True:
            try:
                event = session.next(timeout=0)
            except queue.Empty:
                break
            if event is None:
                code, stderr = session.ended(wait=2)
                kind, problem, fix = remote.failure(plan.cluster, node, code, stderr)
                if kind == "unreachable":
                    raise HostLost(node.label, "ray-up", "worker", problem)
                raise RayStartFailed(node.label, f"{problem}; {fix}", "")
            if event.get("event") in ("failed", "error"):
                raise RayStartFailed(
                    node.label,
                    event.get("error") or f"ray start exited with {event.get('returncode')}",
                    " | ".join(event.get("tail", [])[-3:]),
                )


def _tail(started: Started, nodes: tuple[Node, ...], label: str) -> str:
    """The end of a missing node's Ray log, asked of its supervisor."""
    node = next(n for n in nodes if n.label == label)
    session = started.nodes.get(node.index)
    if session is None or not session.send({"cmd": "tail"}):
        return ""
    try:
        return " | ".join(session.until(["tail"], timeout=15).get("tail", [])[-3:])
    except (remote.Ended, queue.Empty):
        return ""
