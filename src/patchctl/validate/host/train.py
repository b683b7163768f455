"""``train``: the profile's run on the head, through ``patchctl train``'s own code.

The plan, the launch, the gates, ``doctor`` on failure and ``report.json``/``report.png`` are
:mod:`patchctl.train.run`'s, with ``RAY_ADDRESS`` pointing at the cluster validate formed (so no
head of its own is started) and the trainer's overrides validate sends. Each log line goes to
patchctl as it arrives; end-of-file or a "stop" line on stdin stops the trainer (its process
group), so a lost patchctl never leaves a trainer running; so does silence past the lease (patchctl
sends a heartbeat line; a frozen one sends none).
"""

from __future__ import annotations

import _thread
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchctl.validate.host.caller import Caller

if TYPE_CHECKING:
    from patchctl.train.model import Plan


def _watch_stdin(stopped: threading.Event, lease: float | None, captured: threading.Event | None = None) -> None:
    """Interrupt the main thread (the launcher then ends the trainer's group) on stop, EOF or
    no line at all (a heartbeat renews it) for ``lease`` seconds; set ``captured`` when patchctl
    says the other hosts' dumps are taken."""
    caller = Caller()
    while not stopped.is_set():
        said = caller.wait(0.5)
        if captured is not None and said and "captured" in said:
            captured.set()
        if said is None or "stop" in said:
            break
        if lease is not None and time.monotonic() - caller.heard > lease:
            break
    if not stopped.is_set():
        stopped.set()
        _thread.interrupt_main()


#: seconds the trainer is kept hung for patchctl to take every host's dumps (hostdumps.py)
CAPTURE_WAIT = 150.0


def _hung(emit: Callable[[dict[str, Any]], None], captured: threading.Event) -> Callable[[], None]:
    """At the timeout: tell patchctl, which dumps every host's Ray workers while they still wait,
    and wait (bounded) for its word before the trainer is dumped here and killed."""

    def on_hang() -> None:
        emit({"event": "hung"})
        captured.wait(CAPTURE_WAIT)

    return on_hang


def in_run_dir(plan: Plan) -> Plan:
    """The trainer starts in its run folder, not in the tree (the tree stays first on its
    ``PYTHONPATH``): Ray puts the driver's working directory first on ``sys.path`` in every worker
    of the job, on every node, so a driver started in the head's tree made the other nodes' workers
    import the head's path (the head's files where roots differ on a shared disk, whatever sits
    there otherwise) instead of their own tree, which their raylet's ``PYTHONPATH`` names."""
    return replace(plan, launch=replace(plan.launch, cwd=plan.run_dir))


def run(request: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> int:
    from patchctl.clusters import Cluster
    from patchctl.target import open_tree
    from patchctl.train import run as train_run
    from patchctl.train.profiles import load_profile

    t0 = time.monotonic()
    # inherited by the trainer without entering its planned env, which report.json records
    os.environ.update(request.get("ray_auth", {}))
    tree = open_tree(Path.cwd())
    profile = load_profile(request["profile"])
    # the cluster's paths fill the profile; env reaches the trainer (RAY_ADDRESS: the formed cluster)
    view = Cluster(
        "validate",
        (),
        str(tree.root),
        Path(".patchctl/env.sh"),
        paths=dict(request.get("paths", {})),
        env=dict(request.get("env", {})),
    )
    plan = train_run.plan(tree, profile, view, list(request["overrides"]), sys.executable, Path(request["run_dir"]))
    if not request.get("in_tree"):  # every raylet is validate's own, its PYTHONPATH led by its tree
        plan = in_run_dir(plan)
    emit({"event": "plan", "argv": list(plan.launch.argv), "run_dir": str(plan.run_dir), "version": tree.version})
    finished, captured = threading.Event(), threading.Event()
    threading.Thread(
        target=_watch_stdin, args=(finished, request.get("lease"), captured), name="validate-stdin", daemon=True
    ).start()
    try:
        result = train_run.train(
            plan,
            tree,
            t0,
            timeout=request.get("timeout"),
            on_line=lambda line, at: emit({"event": "line", "text": line, "at": round(at, 3)}),
            on_hang=_hung(emit, captured),
        )
    except KeyboardInterrupt:
        emit({"event": "stopped", "run_dir": str(plan.run_dir)})
        return 130
    finally:
        finished.set()
    doc = result.to_json()
    emit(
        {
            "event": "reply",
            "passed": result.passed,
            "returncode": result.returncode,
            "run_dir": str(plan.run_dir),
            "files": [p.name for p in (result.log, result.report, result.plot) if p is not None and p.exists()]
            # what the run left for doctor when it timed out: stacks, flight recorder dumps, ray status
            + [d for d in ("stacks", "nccl_trace") if (plan.run_dir / d).is_dir() and any((plan.run_dir / d).iterdir())]
            + [f for f in ("ray-status.txt",) if (plan.run_dir / f).is_file()],
            "gates": doc.get("gates", []),
            "doctor": doc.get("doctor") or [],
            "steps": len(doc.get("steps", [])),
            "command": list(plan.launch.argv),
            "timings": doc.get("timings", {}),
            "pid": os.getpid(),
        }
    )
    return 0
