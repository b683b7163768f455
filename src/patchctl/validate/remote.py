"""Running validate's host side: ``python -m patchctl.validate.host ACTION`` over ssh.

Every host command goes through one fixed ``sh -c`` script (no user input is ever spliced into
it): it enters the host's tree, sources the ``.patchctl/env.sh`` that ``migrate`` rendered,
exports the node's ``K=V`` words (the cluster's and the host's env, as the config says now),
puts the shipped patchctl package first on ``PYTHONPATH`` (before any the env set) and execs
``PYTHON -m patchctl.validate.host ACTION``.
The tree root, the variables and the interpreter arrive as separate argv words, each quoted for
the remote shell by :func:`patchctl.remote.ssh.ssh_argv`, exactly as migrate quotes its own.

The host side answers with JSON lines on stdout; long-running actions (a Ray node, the trainer)
also read stdin, where a ``{"cmd": "stop"}`` line or end-of-file (patchctl exited, was killed,
or its ssh connection dropped) makes them stop what they started, and ``{"cmd": "beat"}`` lines
renew their lease (teardown.py). Each ssh runs in a session of its own, so a Ctrl-C at the
terminal reaches patchctl alone, which then decides what to stop.
"""

from __future__ import annotations

import json
import queue
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from patchctl import proc
from patchctl.clusters import Cluster
from patchctl.errors import PatchctlError
from patchctl.remote import ssh
from patchctl.validate.model import Node

#: where validate ships its own package inside the host's tree (migrate never sends .patchctl/)
PKG_DIR = ".patchctl/validate/pkg"
#: exit codes of the wrapper script, told apart from the host side's own failures
NO_ROOT, NO_ENV = 97, 98
_SCRIPT = (
    'R="$1"; shift; cd "$R" || exit 97; [ -r .patchctl/env.sh ] || { echo "no .patchctl/env.sh in $R" >&2; '
    'exit 98; }; . ./.patchctl/env.sh || exit 98; while [ $# -gt 0 ]; do case "$1" in *=*) export "$1"; '
    f'shift;; *) break;; esac; done; PYTHONPATH="$R/{PKG_DIR}${{PYTHONPATH:+:$PYTHONPATH}}"; export PYTHONPATH; '
    'exec "$@"'
)


def host_words(cluster: Cluster, node: Node, action: str, extra_env: dict[str, str] | None = None) -> list[str]:
    """The remote argv of one host action (before ssh quotes it)."""
    env = {**node.env, **(extra_env or {})}
    return [
        "sh",
        "-c",
        _SCRIPT,
        "patchctl-validate",
        node.host.root,
        *(f"{k}={v}" for k, v in env.items()),
        cluster.python,
        "-m",
        "patchctl.validate.host",
        action,
    ]


#: how a host action's words reach their node: ``None`` is ssh; inside a Slurm job, where compute
#: nodes have no ssh, the job's driver (patchctl.slurm.jobside) sets an ``srun`` step on the node
Launcher = Callable[[Node, list[str]], list[str]]
launcher: Launcher | None = None


def host_argv(
    cluster: Cluster, node: Node, action: str, control: Path | None = None, extra_env: dict[str, str] | None = None
) -> list[str]:
    words = host_words(cluster, node, action, extra_env)
    return launcher(node, words) if launcher is not None else ssh.ssh_argv(cluster, node.host, words, control)


def failure(cluster: Cluster, node: Node, returncode: int | None, stderr: str) -> tuple[str, str, str]:
    """``(kind, problem, fix)`` for a host action that ended without its answer; kind is
    ``unreachable`` or ``not-ready``."""
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    tail = lines[-1].strip() if lines else "no output"
    if returncode == 255:
        return "unreachable", ssh.unreachable_reason(cluster, node.host, stderr), ""
    if returncode == NO_ROOT:
        return "not-ready", f"the tree {node.host.root} is not there", f"run `patchctl migrate {cluster.name}` first"
    if returncode == NO_ENV:
        return (
            "not-ready",
            f"{node.host.root}/.patchctl/env.sh is missing",
            f"run `patchctl migrate {cluster.name}` first (it renders the env file validate sources)",
        )
    if returncode == 127:
        return (
            "not-ready",
            f"{cluster.python} is not there (exit 127: {tail})",
            f"set clusters.{cluster.name}.python to the interpreter verl is installed in",
        )
    if "No module named 'patchctl" in stderr:
        return "not-ready", f"patchctl's package did not arrive in {PKG_DIR} ({tail})", "run validate again"
    return "not-ready", f"the host side exited with {returncode}: {tail}", "see the host's message above"


class Session:
    """One host action over ssh, with its JSON lines read on a thread as they come."""

    def __init__(
        self,
        cluster: Cluster,
        node: Node,
        action: str,
        request: dict[str, Any],
        control: Path | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.cluster, self.node, self.action = cluster, node, action
        self.argv = host_argv(cluster, node, action, control, extra_env)
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 - outlives __init__: close() closes it
        self._events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._send_lock = threading.Lock()  # the heartbeat thread writes too: one whole line at a time
        self._proc = proc.spawn(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, new_session=True
        )
        self._reader = threading.Thread(target=self._read, name=f"validate-{action}-{node.label}", daemon=True)
        self._reader.start()
        self.send(request)

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            try:
                event = json.loads(raw.decode("utf-8", "replace"))
            except ValueError:
                continue  # a stray print on the host: not part of the protocol
            if isinstance(event, dict):
                self._events.put(event)
        self._events.put(None)

    def send(self, message: dict[str, Any]) -> bool:
        """Write one line to the host side; False when it is gone."""
        try:
            assert self._proc.stdin is not None
            with self._send_lock:
                self._proc.stdin.write((json.dumps(message) + "\n").encode("utf-8"))
                self._proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def next(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next event; None once the session ended. ``queue.Empty`` after ``timeout``.

        The end is seen by every reader: a worker's start can still be waiting on its session
        when teardown reads the same one, and the one end-of-session marker taken by teardown
        left the start waiting its full three minutes, holding patchctl's exit (the pool's
        threads are joined at exit)."""
        event = self._events.get(timeout=timeout)
        if event is None:
            self._events.put(None)
        return event

    def until(self, names: Sequence[str], timeout: float) -> dict[str, Any]:
        """Events until one named in ``names``; a session that ends first raises :class:`Ended`."""
        import time

        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise queue.Empty
            event = self.next(left)
            if event is None:
                raise Ended(*self.ended())
            if event.get("event") in names:
                return event

    def alive(self) -> bool:
        return self._proc.poll() is None

    def ended(self, wait: float = 10.0) -> tuple[int | None, str]:
        """The exit code and stderr once the ssh process has ended."""
        try:
            code: int | None = self._proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            code = None
        self._err.seek(0)
        return code, self._err.read().decode("utf-8", "replace")

    def close(self, wait: float = 20.0) -> None:
        """End-of-file for the host side (it stops what it started), then wait for ssh to exit."""
        try:
            if self._proc.stdin is not None:
                with self._send_lock:
                    self._proc.stdin.close()
        except OSError:
            pass
        try:
            self._proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._reader.join(timeout=5)
        self._err.close()


class Ended(PatchctlError):
    """A host session ended before the answer it was waiting for."""

    def __init__(self, returncode: int | None, stderr: str) -> None:
        self.returncode, self.stderr = returncode, stderr
        super().__init__(f"the host session ended (exit {returncode})")


def call(
    cluster: Cluster,
    node: Node,
    action: str,
    request: dict[str, Any],
    timeout: float,
    control: Path | None = None,
    answer: str = "reply",
) -> dict[str, Any]:
    """One request, its one answer (the event named ``answer``). Raises :class:`Ended` when the
    host side ended without answering and ``queue.Empty`` after ``timeout``."""
    session = Session(cluster, node, action, request, control)
    try:
        return session.until([answer], timeout)
    finally:
        session.close(wait=5)
