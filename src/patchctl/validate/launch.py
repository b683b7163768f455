"""Steps ``launch`` and ``watch``: the profile's training on the head, streamed home.

The head runs it through ``patchctl train``'s own code (host/train.py) with ``trainer.nnodes``
and ``trainer.n_gpus_per_node`` from what Ray reported (the user's overrides still win). Each
log line comes back as it is written: it is appended to the local ``train.log`` and read by
``train``'s log parser, which drives the live progress line. The session ending without the
trainer's verdict means the head was lost (ssh's exit 255) or its side died.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable

from patchctl import fsutil
from patchctl.train.logparse import LOSS_KEYS, REWARD_KEYS, LogScan, Progress, pick
from patchctl.validate import plan as planning
from patchctl.validate import remote
from patchctl.validate.errors import HostLost, HostNotReady, TimedOut
from patchctl.validate.host.procs import MARKER
from patchctl.validate.model import Note, RayCluster, Trained
from patchctl.validate.teardown import Started

NoteFn = Callable[[Note], None]
ProgressFn = Callable[[Progress], None]


def launch(plan: planning.Plan, started: Started, ray: RayCluster) -> remote.Session:
    overrides = planning.trainer_overrides(plan.options, ray.nnodes, ray.gpus_per_node)
    request = {
        "profile": plan.options.profile,
        "overrides": overrides,
        "run_dir": plan.remote_run_dir,
        "paths": dict(plan.cluster.paths),
        "timeout": plan.options.timeout,
        "env": {"RAY_ADDRESS": ray.address, MARKER: plan.marker(plan.head)},
        "ray_auth": plan.ray_auth,
        "lease": plan.options.lease,
        # a Ray node joined with --join is the user's: its raylet's PYTHONPATH does not name the
        # host's tree, so its workers find verl only through the driver's working directory
        "in_tree": bool(started.joined),
    }
    return started.open(
        plan.head,
        lambda: remote.Session(plan.cluster, plan.head, "train", request, started.conns.masters[0].socket),
        trainer=True,
    )


#: seconds the head may take, once every host's dumps are in, to dump its trainer, stop it and report
AFTER_HANG = 180.0


def watch(
    plan: planning.Plan,
    session: remote.Session,
    note: NoteFn,
    progress: ProgressFn,
    on_hang: Callable[[], None] | None = None,
) -> Trained:
    """The trainer's events until its verdict. At its timeout the head says "hung" and waits:
    ``on_hang`` then takes every host's dumps while the ranks still wait, and the head is told
    to go on (its own dumps, the kill, the report)."""
    head = plan.head.label
    plan.run_dir.mkdir(parents=True, exist_ok=True)
    scan = LogScan()
    command: tuple[str, ...] = ()
    tail: list[str] = []
    limit = None if plan.options.timeout is None else time.monotonic() + plan.options.timeout + 60
    # streamed (tail -f works), and never through a link planted in --out (fsutil.open_into)
    with fsutil.open_into(plan.run_dir, "train.log", stream=True) as log:
        while True:
            try:
                event = session.next(timeout=1.0)
            except queue.Empty:
                if limit is not None and time.monotonic() > limit:
                    raise TimedOut(head, float(plan.options.timeout or 0)) from None
                continue
            if event is None:
                code, stderr = session.ended()
                kind, problem, fix = remote.failure(plan.cluster, plan.head, code, stderr)
                if kind == "unreachable" or code is None:
                    raise HostLost(head, "training", "head", problem)
                raise HostNotReady(head, "training", problem, fix)
            name = event.get("event")
            if name == "plan":
                command = tuple(event["argv"])
                note(
                    Note(
                        "launch",
                        head,
                        f"trainer started (verl {event.get('version') or '?'}): " + planning.show(command[:3]) + " ...",
                    )
                )
            elif name == "line":
                text = event["text"]
                log.write((text + "\n").encode("utf-8", "surrogateescape"))
                log.flush()  # the local log grows as the run goes (tail -f works)
                tail = [*tail, text][-20:]
                step = scan.feed(text, event.get("at"))
                if step is not None:
                    progress(_progress(scan, step.step, event.get("at") or 0.0))
            elif name == "hung":
                note(Note("watch", head, "the trainer timed out: taking every host's stacks and Ray logs"))
                try:
                    if on_hang is not None:
                        on_hang()
                finally:
                    session.send({"cmd": "captured"})
                if limit is not None:
                    limit = time.monotonic() + AFTER_HANG
            elif name == "error":
                raise HostNotReady(
                    head,
                    "training",
                    f"the trainer could not start: {event['error']}",
                    "fix the cause above (profile, tree or paths) and run validate again",
                )
            elif name == "reply":
                return Trained(
                    bool(event["passed"]),
                    event.get("returncode"),
                    len(scan.steps),
                    event["run_dir"],
                    tuple(event.get("command") or command),
                    tuple(event.get("gates", ())),
                    tuple(event.get("doctor", ())),
                    tuple(tail),
                    tuple(event.get("files", ())),
                )


def _progress(scan: LogScan, step: int, at: float) -> Progress:
    first = scan.steps[0]
    per = (at - first.at) / (len(scan.steps) - 1) if len(scan.steps) > 1 and first.at is not None else None
    last = scan.steps[-1].metrics
    return Progress(step, scan.total_steps, pick(last, REWARD_KEYS), pick(last, LOSS_KEYS), per, at)


def summary(trained: Trained) -> str:
    """Why a run did not pass, in one line: doctor's finding, else the first failed gate."""
    if trained.doctor:
        d = trained.doctor[0]
        if "title" in d:
            return (
                f"trainer exited with {trained.returncode}; doctor: {d['title']} (log line {d.get('line')}): "
                f"{d.get('fix', '')}"
            )
    failed = [g for g in trained.gates if g.get("status") == "fail"]
    if failed:
        g = failed[0]
        last = next((ln for ln in reversed(trained.tail) if ln.strip()), "")
        return f"gate {g['name']} failed: {g.get('reason', '')}" + (
            f"; the log ends: {last.strip()[:200]}" if g["name"] == "exit-code" and last else ""
        )
    return f"trainer exited with {trained.returncode}"
