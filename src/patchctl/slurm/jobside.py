"""``python -m patchctl.slurm.jobside RUN_DIR``: a validate job's driver, run by its batch script on
the allocation's first node.

It does what validate does over ssh, with ``srun`` in place of ssh and the same host side
(``patchctl.validate.host``): the Slurm preflight (preflight.py), a Ray head on the first node and
a worker on every other one, each one ``srun --overlap`` step with the run's token and marker
(host/node.py: refuses a Ray already there, stops exactly what it started when its input ends);
then ``form`` waits for every node and GPU and proves strangers are refused, and ``train`` runs
the profile's trainer on the head and writes the report into RUN_DIR. Every event goes to stdout
as one JSON line, which is the job's output file: patchctl, on the other side of the login node,
reads it as it grows. The request (``RUN_DIR/job.json``, 0600, holding the token) is removed once
read. Cancelled (scancel, the time limit), Slurm signals every step: the node sessions lose their
input and stop their Ray; whatever remains Slurm kills with the job.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from patchctl.clusters import Cluster, Host
from patchctl.slurm import health as job_health
from patchctl.slurm import preflight
from patchctl.validate import gpus, remote
from patchctl.validate.errors import DuplicateGpu, UnevenGpus, ValidateFailed
from patchctl.validate.host.census import own_resource
from patchctl.validate.host.procs import MARKER
from patchctl.validate.model import Node, Note, RayNode
from patchctl.validate.plan import HEALTH


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


class Stop(Exception):
    """The run ends here: ``stage``, the node at fault and the one-line cause."""

    def __init__(self, stage: str, node: str, cause: str) -> None:
        self.stage, self.node, self.cause = stage, node, cause
        super().__init__(cause)


class Child:
    """One host action (a srun step or a local process) speaking validate's JSON-lines protocol."""

    def __init__(self, argv: list[str], request: dict[str, Any]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.send(request)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            with contextlib.suppress(ValueError):
                event = json.loads(raw)
                if isinstance(event, dict):
                    self.events.put(event)
        self.events.put(None)

    def send(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()

    def until(self, names: tuple[str, ...], timeout: float) -> dict[str, Any] | None:
        """The next event named in ``names`` (None: the action ended first); ``queue.Empty`` after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            event = self.events.get(timeout=max(0.01, deadline - time.monotonic()))
            if event is None or event.get("event") in names:
                return event

    def close(self, wait: float = 30.0) -> dict[str, Any] | None:
        """End of input (the action stops what it started); its "stopped" event, if it said one."""
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        last = None
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                event = self.events.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if event is None:
                break
            if event.get("event") == "stopped":
                last = event
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return last


def hostnames() -> list[str]:
    out = subprocess.run(
        ["scontrol", "show", "hostnames", os.environ["SLURM_JOB_NODELIST"]], capture_output=True, text=True, check=True
    )
    return out.stdout.split()


def address(node: str) -> str:
    """The node's IP for Ray: its Slurm NodeAddr, resolved (Ray binds and advertises it)."""
    done = subprocess.run(["scontrol", "show", "node", "-o", node], capture_output=True, text=True, check=False)
    words = dict(w.split("=", 1) for w in done.stdout.split() if "=" in w)
    return socket.gethostbyname(words.get("NodeAddr") or node)


def _cgroup() -> str:
    try:
        return Path("/proc/self/cgroup").read_text().splitlines()[0].split(":", 2)[2]
    except (OSError, IndexError):
        return ""


class Job:
    def __init__(self, run_dir: Path, request: dict[str, Any]) -> None:
        self.run_dir, self.req = run_dir, request
        self.root = os.getcwd()
        self.req["run_dir"] = str(run_dir)
        #: without a shared root each node has its own tree (``%n`` in the root); run_dir is then
        #: in this node's, and patchctl reads it through a step of this job (hold)
        self.own_roots = bool(request.get("own_roots"))
        self.view = Cluster("slurm", (), self.root, Path(".patchctl/env.sh"), python=request["python"])
        self.auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": request.pop("token")}
        self.children: list[Child] = []
        #: what each step's host side runs under: without Slurm's ROCR_VISIBLE_DEVICES (preflight.drops_rocr)
        self.unset: list[str] = []
        #: node -> its stack, found by its Ray step where no health check ran (None: they ran)
        self.stacks: dict[str, dict[str, Any]] | None = None

    def words(self, node: str, index: int, action: str) -> list[str]:
        """The host side's argv (remote.py's wrapper: env file, env, package path), its module
        swapped for stepside's, which turns Slurm's SIGTERM into the cleanup it already has."""
        view = Node(node, Host(node, self.node_root(node)), index, dict(self.req["env"]))
        words = remote.host_words(self.view, view, action)
        at = words.index("patchctl.validate.host")
        return [*self.unset, *words[:at], "patchctl.slurm.stepside", *words[at + 1 :]]

    def node_root(self, node: str) -> str:
        """The tree on ``node``: the shared one, or, without a shared root, that node's own copy
        (``%n`` in the configured root is the node's name, as migrate placed it)."""
        return self.req["root"].replace("%n", node) if self.own_roots else self.root

    def marker(self, index: int) -> str:
        return f"{self.req['run_id']}.{index}"

    def start_node(self, nodes: list[str], index: int, addresses: dict[str, str], cpus: int, gcs: str | None) -> str:
        node = nodes[index]
        request = {
            "role": "head" if index == 0 else "worker",
            "address": addresses[node],
            "gpus": self.req["gpus"],
            "port": self.req["ray_port"],
            "gcs": gcs,
            "marker": self.marker(index),
            "join": False,
            "num_cpus": cpus,
            "object_store_bytes": self.req.get("object_store_bytes"),
            "ray_auth": self.auth,
            "ceiling": self.req["ceiling"],
            "run_rel": os.path.relpath(self.req["run_dir"], self.root),
            # asked for, the head's dashboard and client server run as on an ssh head (raystart.py)
            "dashboard": index == 0 and bool(self.req.get("dashboard")),
            "ray_client": index == 0 and bool(self.req.get("ray_client")),
        }
        if self.stacks is not None:  # this step finds the node's stack first (node.py), as the preflight would
            request["stack"] = True
        srun = ["srun", "--overlap", "--nodes=1", "--ntasks=1", f"--nodelist={node}", "--kill-on-bad-exit=0"]
        child = Child([*srun, *self.words(node, index, "node")], request)
        self.children.append(child)
        wanted = ("up",) if index == 0 else ("starting",)
        try:
            event = child.until((*wanted, "stack", "refused", "failed", "error"), 180)
            if event is not None and event["event"] == "stack" and self.stacks is not None:
                self.stacks[node] = event["stack"]
                event = child.until((*wanted, "refused", "failed", "error"), 180)
        except queue.Empty:
            raise Stop("ray-up", node, f"{node}: ray start gave no answer in 180 s") from None
        if event is None:
            raise Stop("ray-up", node, f"{node}: the Ray node's job step ended before Ray started (see srun's message)")
        if event["event"] == "refused" and event.get("lease"):  # another live run's GPU (gpulease.py)
            raise Stop("ray-up", node, f"{node}: {event['lease']}; {event.get('fix', '')}")
        if event["event"] == "refused":
            raise Stop("ray-up", node, f"{node}: a Ray node already runs at {event['address']} (pid {event['pid']})")
        if event["event"] in ("failed", "error"):
            tail = " | ".join(event.get("tail", [])[-3:])
            raise Stop("ray-up", node, f"{node}: ray start failed: {event.get('error') or tail}")
        emit(
            {
                "event": "ray-node",
                "node": node,
                "role": request["role"],
                "address": addresses[node],
                "dashboard": _bound(event, "--dashboard-port", addresses[node]) if request["dashboard"] else None,
                "client": _bound(event, "--ray-client-server-port", addresses[node]) if request["ray_client"] else None,
            }
        )
        return gcs or f"{addresses[node]}:{self.req['ray_port']}"

    def form(self, nodes: list[str], addresses: dict[str, str], gcs: str) -> dict[str, Any]:
        expected = [
            {"label": n, "address": addresses[n], "gpus": self.req["gpus"], "resource": own_resource(self.marker(i))}
            for i, n in enumerate(nodes)
        ]
        request = {"gcs": gcs, "expected": expected, "timeout": self.req["ray_timeout"], "ray_auth": self.auth}
        child = Child(self.words(nodes[0], 0, "form"), request)
        by_address = {addresses[n]: n for n in nodes}
        try:
            while True:
                event = child.until(("joined", "timeout", "reply", "error"), self.req["ray_timeout"] + 180)
                if event is None or event["event"] == "error":
                    why = event.get("error") if event else "it ended"
                    raise Stop("ray-up", nodes[0], f"{nodes[0]}: the head could not list its nodes ({why})")
                if event["event"] == "joined":
                    emit({"event": "joined", "node": by_address.get(event["address"]), **event})
                elif event["event"] == "timeout":
                    missing = by_address.get(event["missing"][0], event["missing"][0])
                    raise Stop("ray-up", missing, f"{missing}: never joined Ray in {event['waited']} s")
                else:
                    break
        except queue.Empty:
            raise Stop("ray-up", nodes[0], f"{nodes[0]}: the head did not list its nodes in time") from None
        finally:
            child.close(10)
        refused = bool(event["auth"]) and all(v.get("outcome") == "refused" for v in event["auth"].values())
        if event.get("foreign"):
            raise Stop("ray-up", nodes[0], f"{nodes[0]}: a Ray node that is not the run's joined its cluster")
        if not refused and not self.req.get("insecure_ray"):
            raise Stop("ray-up", nodes[0], f"{nodes[0]}: the run's Ray let in a caller without its token")
        return event

    def health(self, nodes: list[str], addresses: dict[str, str]) -> None:
        """validate's host preflight and health checks on every node of the allocation (health.py)."""
        plan = job_health.make_plan(self.req, nodes, addresses, self.root, {n: self.node_root(n) for n in nodes})

        def note(n: Note) -> None:
            emit({"event": "note", "stage": n.stage, "host": n.host, "text": n.text})

        try:
            found, measured = job_health.run(plan, note)
        except ValidateFailed as exc:
            for p in exc.preflight:
                emit({"event": "host-preflight", "preflight": asdict(p)})
            emit({"event": "health", "health": job_health.dump(getattr(exc, "health", None))})
            raise Stop(exc.stage or "checks", exc.host, str(exc)) from None
        for p in found:
            emit({"event": "host-preflight", "preflight": asdict(p)})
        emit({"event": "health", "health": job_health.dump(measured)})

    def stack(self, nodes: list[str], addresses: dict[str, str], found: dict[str, dict[str, Any]]) -> None:
        """The stack table of the rows the nodes' Ray steps found, judged as validate judges it
        (a difference Ray or NCCL cannot survive ends the run): the report's, for --compare."""
        plan = job_health.make_plan(self.req, nodes, addresses, self.root, {n: self.node_root(n) for n in nodes})

        def note(n: Note) -> None:
            emit({"event": "note", "stage": n.stage, "host": n.host, "text": n.text})

        try:
            measured = job_health.stack_only(plan, found, note)
        except ValidateFailed as exc:
            emit({"event": "health", "health": job_health.dump(getattr(exc, "health", None))})
            raise Stop(exc.stage or "checks", exc.host, str(exc)) from None
        emit({"event": "health", "health": job_health.dump(measured)})

    def distinct_gpus(self, nodes: list[str], addresses: dict[str, str], listed: list[dict[str, Any]]) -> None:
        """validate's GPU identity check (validate/gpus.py) over the nodes as Ray listed them: one
        physical GPU behind two nodes (or ranks), or nodes offering different counts, stop the run.
        Slurm numbers each node's GPUs from 0; a gres.conf that gives two nodes of one machine the
        same device file, or a node without device confinement, shows here."""
        by_address = {addresses[n]: n for n in nodes}
        ray_nodes = tuple(
            RayNode(
                by_address.get(d["address"], d["address"]),
                d["address"],
                len(d.get("uuids", [])) or self.req["gpus"],
                0.0,
                d.get("cuda_visible_devices"),
                tuple(d.get("uuids", [])),
            )
            for d in listed
        )
        configured = {r.label: Node(r.label, Host(r.label, self.root), i, {}) for i, r in enumerate(ray_nodes)}
        try:
            gpus.check(ray_nodes, configured)
        except DuplicateGpu as exc:
            raise Stop(
                "ray-up",
                exc.host,
                f"{exc.found}; each node's gres.conf must name its own GPUs' device files "
                "(and cgroup.conf ConstrainDevices=yes hides the rest)",
            ) from None
        except UnevenGpus as exc:
            raise Stop(
                "ray-up",
                exc.host,
                f"{exc.host}: the nodes offer different GPU counts ({exc.shown}); verl needs the same on every node: "
                "ask for whole nodes of one kind (gpus_per_node, or a --constraint in sbatch)",
            ) from None

    def train(self, nodes: list[str], gcs: str) -> dict[str, Any]:
        request = {
            "profile": self.req["profile"],
            "overrides": self.req["overrides"],
            "run_dir": self.req["run_dir"],
            "paths": self.req["paths"],
            "timeout": self.req["timeout"],
            "env": {"RAY_ADDRESS": gcs, MARKER: self.marker(0)},
            "ray_auth": self.auth,
        }
        child = Child(self.words(nodes[0], 0, "train"), request)
        self.children.append(child)
        while True:
            event = child.until(("plan", "line", "reply", "error", "stopped"), 24 * 3600.0)
            if event is None:
                raise Stop("training", nodes[0], f"{nodes[0]}: the trainer's side ended without its verdict")
            emit({**event, "event": f"train-{event['event']}"})
            if event["event"] == "error":
                raise Stop("training", nodes[0], f"{nodes[0]}: the trainer could not start: {event['error']}")
            if event["event"] == "reply":
                return event

    def run(self) -> int:
        nodes = hostnames()
        emit({"event": "allocation", "nodes": nodes, "job": os.environ.get("SLURM_JOB_ID")})
        seen = preflight.Seen(os.environ, len(os.sched_getaffinity(0)), os.cpu_count() or 1, _cgroup())
        rows = preflight.rows(self.req["num_cpus"], self.req["overrides"], self.req["gpus"], self.req["env"], seen)
        emit({"event": "preflight", "node": nodes[0], "rows": [asdict(r) for r in rows]})
        failed = [r for r in rows if r.status == "fail"]
        if failed:
            r = failed[0]
            raise Stop("preflight", nodes[0], f"{nodes[0]}: preflight check {r.check!r} failed: {r.value}; {r.fix}")
        if preflight.drops_rocr(seen):
            self.unset = ["env", "-u", "ROCR_VISIBLE_DEVICES"]
            job_health.unset = self.unset
        cpus = preflight.ray_cpus(self.req["num_cpus"], seen)
        addresses = {n: address(n) for n in nodes}
        # the checks asked, or the stack alone for --compare (validate.run finds it on every run)
        if self.req["profile"] == HEALTH or set(self.req.get("checks", ())) - {"stack"} or self.req.get("stack"):
            self.health(nodes, addresses)
            if self.req["profile"] == HEALTH:  # the checks were the run: no Ray, no training
                emit({"event": "done", "passed": True, "stage": "done", "node": nodes[0], "cause": ""})
                return 0
        else:  # every run records its stack, as over ssh: found by each node's Ray step, no step more
            self.stacks = {}
        gcs = self.start_node(nodes, 0, addresses, cpus, None)
        for i in range(1, len(nodes)):
            self.start_node(nodes, i, addresses, cpus, gcs)
        if self.stacks is not None:
            self.stack(nodes, addresses, self.stacks)
        formed = self.form(nodes, addresses, gcs)
        emit({"event": "ray-formed", "gcs": gcs, "nodes": formed["nodes"], "seconds": formed["seconds"]})
        self.distinct_gpus(nodes, addresses, formed["nodes"])
        reply = self.train(nodes, gcs)
        emit({"event": "done", "passed": bool(reply["passed"]), "stage": "done", "node": nodes[0], "cause": ""})
        return 0

    def teardown(self) -> None:
        stopped = [c.close() for c in reversed(self.children)]
        emit({"event": "teardown", "stopped": sum((s or {}).get("stopped", 0) for s in stopped)})

    def hold(self) -> None:
        """Without a shared root, the run folder is on this node alone: the job lives on (bounded)
        until patchctl has fetched it through a step of the job (slurm/node_agent.py collect),
        which leaves ``.fetched``. Not once Slurm is ending the job: then nothing is read here."""
        if not self.own_roots or ending:
            return
        emit({"event": "hold", "seconds": HOLD})
        deadline = time.monotonic() + HOLD
        while not (self.run_dir / ".fetched").exists() and time.monotonic() < deadline and not ending:
            time.sleep(0.2)


#: seconds a job without a shared root waits for patchctl to fetch its run folder
HOLD = 300.0
#: set once Slurm has signalled the job (scancel, the time limit): no hold then
ending = False


def _bound(up: dict[str, Any], flag: str, address: str) -> str | None:
    """``address:port`` of what ``ray start`` was told to bind with ``flag`` (its argv, in "up")."""
    argv = [str(a) for a in up.get("argv") or ()]
    return f"{address}:{argv[argv.index(flag) + 1]}" if flag in argv[:-1] else None


def _interrupt(signum: int, frame: object) -> None:
    global ending
    ending = True
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Stop("cancelled", "", "the job was ended by Slurm (SIGTERM)")


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _interrupt)  # scancel, the time limit: teardown still runs
    run_dir = Path(argv[1]).absolute()
    request_file = run_dir / "job.json"
    request = json.loads(request_file.read_text())
    request_file.unlink()  # the token lives on in the processes that need it, not on disk
    job = Job(run_dir, request)
    try:
        return job.run()
    except Stop as stop:
        emit({"event": "done", "passed": False, "stage": stop.stage, "node": stop.node, "cause": stop.cause})
        return 1
    finally:
        job.teardown()
        with contextlib.suppress(Stop):  # Slurm's SIGTERM while holding: the job is over anyway
            job.hold()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
