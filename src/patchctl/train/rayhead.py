"""A Ray head node started beside the trainer, so Ray's start-up overlaps verl's imports.

``python -m verl.trainer.main_ppo`` spends its first seconds importing torch, transformers and
verl, and only then starts a local Ray cluster inside ``ray.init``, which takes seconds more.
Started here at the same moment (``ray start --head --block`` in its own session), the cluster
is up by the time the driver calls ``ray.init``, which then only connects (``RAY_ADDRESS``;
Ray retries until the head has registered, so there is no race to lose). The head is stopped by
terminating its process group: only the processes patchctl started.

``ray start`` also records the head's address in ``<tmp>/ray/ray_current_cluster``, where every
later bare ``ray.init()`` on the machine looks for a cluster to join; ``ray stop`` removes it, a
killed head does not. Left behind, it points at a dead head: verl's own ``ray.init(num_cpus=N)``
then fails ("When connecting to an existing cluster, num_cpus and num_gpus must not be
provided"), as does ``patchctl verify --env``'s Ray check. So :meth:`Head.stop` puts that file
back as it found it.

Ray >= 2.52 turns token authentication on for a cluster ``ray start`` makes, with a token it
writes to ``~/.ray/auth_token``; a driver that looked for that file before the head wrote it (verl
imports Ray while the head starts) connects without one and is refused ("InvalidAuthToken").
So the head and the trainer share a token of this run's own: a 0600 file in the run folder,
named by ``RAY_AUTH_TOKEN_PATH`` beside ``RAY_AUTH_MODE=token`` (older Rays ignore both). The
ports ``ray start`` would otherwise fix (the dashboard agent's 52365, the client server's 10001)
are free ones, so two runs, or another user's Ray, can share a machine.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from patchctl import fsutil, proc
from patchctl.errors import ToolMissing

#: ``ray start --head`` starts Ray's client server on the fixed port 10001 whenever ray[client] is
#: installed, with no option to leave it out: this tells it the client is missing (validate's host/raystart.py)
_CLI = (
    "import sys; import ray.scripts.scripts as s; s.get_ray_client_dependency_error = "
    "lambda: 'not asked for'; sys.argv[0] = 'ray'; s.main()"
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def address_file(env: Mapping[str, str]) -> Path:
    """Where ``ray start`` records the cluster a bare ``ray.init()`` joins (as Ray 2.x computes it:
    ``ray._common.utils.get_ray_address_file``)."""
    if "RAY_TMPDIR" in env:
        base = env["RAY_TMPDIR"]
    elif sys.platform.startswith("linux") and "TMPDIR" in env:
        base = env["TMPDIR"]
    else:
        base = "/tmp"  # noqa: S108 - Ray's own default, only read here
    return Path(base) / "ray" / "ray_current_cluster"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


@dataclass(frozen=True)
class HeadSpec:
    argv: tuple[str, ...]
    #: what the trainer's environment gets so that ray.init connects instead of starting
    address: str
    log: Path
    #: the run's token file (written by :class:`Head`, 0600); its path, never the token, is in the env
    token: Path


def auth_env(head: HeadSpec) -> dict[str, str]:
    """What the head and the trainer both need to agree on this run's token (Ray >= 2.52)."""
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(head.token)}


def spec(python: str, num_cpus: int, log: Path, port: int | None = None) -> HeadSpec:
    port = port or free_port()
    argv = (
        python,
        "-c",
        _CLI,
        "start",
        "--head",
        f"--port={port}",
        "--node-ip-address=127.0.0.1",
        f"--num-cpus={num_cpus}",
        "--include-dashboard=false",
        "--disable-usage-stats",
        f"--dashboard-agent-listen-port={free_port()}",
        "--block",
    )
    return HeadSpec(argv, f"127.0.0.1:{port}", log, log.parent / "ray-auth-token")


class Head:
    """A running head node; :meth:`stop` ends it (idempotent)."""

    def __init__(self, head: HeadSpec, env: dict[str, str], cwd: Path) -> None:
        """Start it with the trainer's environment: Ray's workers inherit the raylet's, not the driver's."""
        self.spec = head
        head.log.parent.mkdir(parents=True, exist_ok=True)
        head.token.unlink(missing_ok=True)
        fd = os.open(head.token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(secrets.token_hex(32))
        self._open = contextlib.ExitStack()  # the head's log, closed by stop(); never written through a link
        self._log = self._open.enter_context(fsutil.open_into(head.log.parent, head.log.name, stream=True))
        env = {k: v for k, v in {**os.environ, **env}.items() if k != "RAY_ADDRESS"}
        self._address_file = address_file(env)
        self._previous = _read(self._address_file)
        try:
            self.proc = proc.spawn(
                head.argv,
                cwd=cwd,
                env=env,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                new_session=True,
                why="it starts the Ray head node; pass --python PATH",
            )
        except ToolMissing:
            self._open.close()
            raise

    def stop(self) -> None:
        """SIGTERM the head's group, SIGKILL what is left a second later.

        The run is over when this is called; Ray's graceful shutdown of an idle head takes ~3 s
        that would only delay the command's exit.
        """
        for sig, wait in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        self._forget()
        self._open.close()

    def _forget(self) -> None:
        """Put ``ray_current_cluster`` back as it was before this head wrote its address there."""
        now = _read(self._address_file)
        port = self.spec.address.rsplit(":", 1)[-1]
        if now is None or now == self._previous or now.strip().rsplit(":", 1)[-1] != port:
            return  # untouched, or since rewritten by another cluster's `ray start`
        try:
            if self._previous is None:
                self._address_file.unlink()
            else:
                self._address_file.write_text(self._previous, encoding="utf-8")
        except OSError:
            pass
