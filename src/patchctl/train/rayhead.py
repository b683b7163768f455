"""A Ray head node started beside the trainer, so Ray's start-up overlaps verl's imports.

``python -m verl.trainer.main_ppo`` spends its first seconds importing torch, transformers and
verl, and only then starts a local Ray cluster inside ``ray.init``, which takes seconds more.
Started here at the same moment (``ray start --head --block`` in its own session), the cluster
is up by the time the driver calls ``ray.init``, which then only connects (``RAY_ADDRESS``;
Ray retries until the head has registered, so there is no race to lose). The head is stopped by
terminating its process group: only the processes patchctl started.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from patchctl.errors import ToolMissing

_CLI = "import sys; from ray.scripts.scripts import main; sys.argv[0] = 'ray'; main()"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class HeadSpec:
    argv: tuple[str, ...]
    #: what the trainer's environment gets so that ray.init connects instead of starting
    address: str
    log: Path


def spec(python: str, num_cpus: int, log: Path, port: int | None = None) -> HeadSpec:
    port = port or free_port()
    argv = (python, "-c", _CLI, "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1",
            f"--num-cpus={num_cpus}", "--include-dashboard=false", "--disable-usage-stats", "--block")
    return HeadSpec(argv, f"127.0.0.1:{port}", log)


class Head:
    """A running head node; :meth:`stop` ends it (idempotent)."""

    def __init__(self, head: HeadSpec, env: dict[str, str], cwd: Path) -> None:
        """Start it with the trainer's environment: Ray's workers inherit the raylet's, not the driver's."""
        self.spec = head
        head.log.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(head.log, "w", encoding="utf-8")
        env = {k: v for k, v in {**os.environ, **env}.items() if k != "RAY_ADDRESS"}
        try:
            self.proc = subprocess.Popen(list(head.argv), cwd=cwd, env=env, stdout=self._log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        except FileNotFoundError:
            self._log.close()
            raise ToolMissing(head.argv[0], "it starts the Ray head node; pass --python PATH") from None

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
        self._log.close()
