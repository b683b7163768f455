"""``node``: one Ray node of the run, supervised for its whole life on this host.

Started over ssh and kept open by patchctl until the run ends. It refuses when a Ray node
already runs at this host's address (unless asked to join it), starts ``ray start --block`` in
its own session with the run's marker and a private ``--temp-dir``/``RAY_TMPDIR`` inside the
user's 0700 folder (statedir.py: so neither Ray's files nor its ``ray_current_cluster`` pointer
touch another cluster's, and no other user can enter them), reports "up" once Ray says so, and
then waits. A ``{"cmd": "stop"}`` line, end-of-file on stdin — patchctl exited, was interrupted
or lost its connection — or silence past the lease (patchctl sends a heartbeat line; a frozen
laptop sends none), or the run's hard ceiling, stops exactly what it started: ``ray start
--block`` ends its daemons on SIGTERM, and every process still carrying the marker is ended.
One that arrived while this side was still starting means Ray is never started; the node's lock
(statedir.hold) tells a ``reap`` from the teardown when this side has ended.

Ray's command line (raystart.py) binds every port on the node's address; the dashboard and Ray's
client server start only when asked.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from patchctl import bytecode
from patchctl.validate.host import procs, raystart, statedir
from patchctl.validate.host.caller import Caller

_UP = "Ray runtime started"


def tail(path: str, lines: int = 8) -> list[str]:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [ln for ln in text.splitlines() if ln.strip()][-lines:]


def log_tail(temp_dir: str, start_log: str) -> list[str]:
    """The end of this node's Ray log: the raylet's own log where there is one, else ray start's."""
    found = sorted(p for p in _logs(temp_dir) if os.path.basename(p) in ("raylet.out", "raylet.err"))
    text = [ln for p in found for ln in tail(p, 4)]
    return (text + tail(start_log, 6))[-8:]


def _logs(temp_dir: str) -> list[str]:
    out = []
    for dirpath, _dirs, files in os.walk(temp_dir):
        out += [os.path.join(dirpath, f) for f in files]
    return out


def _existing(request: dict[str, Any]) -> dict[str, Any] | None:
    run = request["marker"].split(".")[0] + "."
    return next((r for r in procs.raylets(exclude=run) if r["address"] == request["address"]), None)


def run(request: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> int:
    """:func:`serve` with the node's GPUs held for its whole life, given back before "stopped"."""
    from patchctl import gpuusers

    if request.get("stack"):  # a Slurm job without the health checks records the stack here (slurm/jobside.py)
        from patchctl.validate.host.preflight import stack_here

        emit({"event": "stack", "stack": stack_here(Path.cwd())})
    lease, refused = gpuusers.node_claim(request)
    if refused is not None:
        emit(refused)
        return 0

    def said(event: dict[str, Any]) -> None:
        if event.get("event") == "stopped" and lease is not None:
            lease.release()  # the next run may start as soon as patchctl hears "stopped"
        emit(event)

    return serve(request, said)


def serve(request: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> int:
    existing = _existing(request)
    if existing is not None:
        if not request.get("join"):
            emit({"event": "refused", **existing})
            return 0
        if request["role"] == "worker" and existing["gcs"] != request["gcs"]:
            emit({"event": "refused", **existing, "other_cluster": True})
            return 0
        emit({"event": "joined", **existing})
        reason = _serve(None, emit, lease=_lease(request))
        emit({"event": "stopped", "stopped": 0, "left": [], "reason": reason})
        return 0
    if request["role"] == "head" and request.get("ray_client") and not raystart.has_ray_client():
        emit(
            {
                "event": "error",
                "error": "--ray-client: Ray's client server needs ray[client] on this host "
                "(pip install 'ray[client]' into the cluster's python)",
            }
        )
        return 0
    lock = statedir.hold(request["marker"])
    try:
        return _start(request, emit)
    finally:
        statedir.release(request["marker"], lock)


def _start(request: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> int:
    """Start Ray and supervise it, unless patchctl gave up while this side was starting."""
    procs.sweep_stale()
    caller = Caller()
    if caller.gone():
        emit({"event": "stopped", "stopped": 0, "left": [], "reason": "patchctl left before Ray started"})
        return 0
    temp_dir = statedir.make_session_dir(request["marker"])
    start_log = os.path.join(temp_dir, "ray-start.log")
    env = dict(os.environ, RAY_TMPDIR=temp_dir, **{procs.MARKER: request["marker"]}, **request.get("ray_auth", {}))
    env.pop("RAY_ADDRESS", None)  # a worker joins the address it is given, nothing else
    env.update(bytecode.outside_tree(env))  # Ray's workers import verl from this host's tree
    env.update(_code_hook(request.get("run_rel"), env.get("PYTHONPATH", "")))
    env = {**_flight_recorder(request.get("run_rel")), **env}  # the user's own TORCH_NCCL_* win
    argv = raystart.ray_argv(request, temp_dir)
    with open(start_log, "wb") as log:
        child = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    emit({"event": "starting", "pid": child.pid, "temp_dir": temp_dir})
    reason, last = "", []
    try:
        reason = _serve(
            child, emit, temp_dir, start_log, float(request.get("start_timeout", 120)), _lease(request), caller
        )
    finally:
        last = log_tail(temp_dir, start_log)
        count, left = _stop(child, request["marker"])
        shutil.rmtree(temp_dir, ignore_errors=True)
    emit({"event": "stopped", "stopped": count, "left": left, "reason": reason, "tail": last})
    return 0


def _code_hook(run_rel: str | None, pythonpath: str) -> dict[str, str]:
    """The raylet's workers inherit its environment, not the trainer's: without the hook there,
    ``patched-code-ran`` would see no Ray actor at all. The hook is installed now, before any
    worker starts; on the head the trainer's launch installs it again into the same folder. The
    node's own tree leads ``PYTHONPATH`` with or without the hook."""
    root = Path.cwd()
    # this node's tree first on its workers' path in every case: the trainer starts in its run
    # folder (host/train.py), so Ray's copy of the driver's working directory no longer brings it
    own = {"PYTHONPATH": os.pathsep.join([str(root), *(p for p in pythonpath.split(os.pathsep) if p)])}
    if not run_rel:
        return own
    from patchctl.train import codehook

    run_dir = (root / run_rel).resolve()
    if not run_dir.is_relative_to(root.resolve()):  # the request comes from patchctl; still, never outside
        return own
    env = codehook.node_env(root, run_dir, pythonpath)
    if env:
        codehook.install(run_dir)
    return env or own


def _flight_recorder(run_rel: str | None) -> dict[str, str]:
    """The NCCL flight recorder on for the raylet's workers, dumping into this node's run folder.

    The trainer's launch sets these for the trainer (hangdump.flight_env), but a Ray worker inherits
    its raylet's environment, not the driver's: without this no rank of a validate run (the head's
    included: its raylet is validate's too) would keep a trace or listen on a pipe, and the
    ``hostdump`` action would find nothing to poke. The folder is made here, before any worker
    starts: torch makes its pipe in it and does not make the folder."""
    if not run_rel:
        return {}
    from patchctl import fsutil
    from patchctl.train import hangdump

    root = Path.cwd().resolve()
    run_dir = (root / run_rel).resolve()
    if not run_dir.is_relative_to(root):
        return {}
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        fsutil.renew_folder(run_dir / hangdump.FLIGHT)  # this run's dumps only
    except OSError:
        return {}
    return hangdump.flight_env(run_dir)


def _lease(request: dict[str, Any]) -> tuple[float | None, float | None]:
    """(seconds of silence allowed, hard ceiling in seconds); None: no bound."""
    return request.get("lease"), request.get("ceiling")


def _serve(
    child: subprocess.Popen[bytes] | None,
    emit: Callable[[dict[str, Any]], None],
    temp_dir: str = "",
    start_log: str = "",
    start_timeout: float = 120.0,
    lease: tuple[float | None, float | None] = (None, None),
    caller: Caller | None = None,
) -> str:
    """Until "stop", end-of-file, silence past the lease or the hard ceiling: say "up" once Ray
    has started (or "failed" when ray start ends or outlasts ``start_timeout`` first), answer
    "tail", report a Ray that ends by itself. Any line (a heartbeat) renews the lease."""
    up = reported = False
    caller = caller or Caller()
    started = time.monotonic()
    silence, ceiling = lease
    while True:
        said = caller.wait(0.05 if child is not None and not up else 0.5)
        now = time.monotonic()
        if said is None:
            return "end of input"
        if silence is not None and now - caller.heard > silence:
            return f"lease expired: no word from patchctl for {silence:g} s"
        if ceiling is not None and now - started > ceiling:
            return f"the run's hard ceiling of {ceiling:g} s was reached"
        for cmd in said:
            if cmd == "stop":
                return "asked"
            if cmd == "tail":
                emit({"event": "tail", "tail": log_tail(temp_dir, start_log)})
        if child is None or reported:
            continue
        if not up and _logged(start_log, _UP):
            up = True
            emit({"event": "up", "pid": child.pid, "temp_dir": temp_dir, "argv": child.args})
        elif child.poll() is not None:
            reported = True
            emit(
                {
                    "event": "failed" if not up else "exited",
                    "returncode": child.returncode,
                    "tail": log_tail(temp_dir, start_log),
                }
            )
        elif not up and time.monotonic() - started > start_timeout:
            reported = True
            emit({"event": "failed", "returncode": None, "tail": log_tail(temp_dir, start_log)})


def _logged(path: str, text: str) -> bool:
    try:
        with open(path, "rb") as f:
            return text.encode() in f.read()
    except OSError:
        return False


def _stop(child: subprocess.Popen[bytes], marker: str) -> tuple[int, list[int]]:
    """``ray start --block`` stops its daemons on SIGTERM; then whatever still carries the marker."""
    before = len(procs.marked(marker))
    if child.poll() is None:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    _, left = procs.stop_marked(marker)
    return before - len(left), left
