"""What an attacker on the cluster's network does to a validate run, for the security tests
(issue 24), plus the probes those tests look through: Ray's own node table, ``ss``, another uid.

Kept apart from validate_helpers.py so the two can change independently.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from validate_helpers import ADDRESS

from patchctl.validate.host.procs import MARKER, raylets

RAY = [sys.executable, "-c", "import sys; from ray.scripts.scripts import main; sys.argv[0]='ray'; main()"]
#: an address of the session's loopback net that no host of the cluster uses
STRANGER = ADDRESS["node1"].rsplit(".", 1)[0] + ".9"
#: the uid another local user has (``nobody``)
OTHER_UID = 65534


def stranger_env(token: str | None = None) -> dict[str, str]:
    """The attacker's environment: no token (and Ray told not to look for one), or the run's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH") and k != MARKER}
    env.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token} if token else {"RAY_AUTH_MODE": "disabled"})
    env["RAY_gcs_server_port_wait_time_s"] = "3"
    return env


def run_gcs(address: str, timeout: float = 120) -> str:
    """The GCS address of the validate run's raylet at ``address``, once it is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for r in raylets():
            if r["address"] == address and r["gcs"]:
                return str(r["gcs"])
        time.sleep(0.1)
    raise AssertionError(f"no raylet at {address} within {timeout} s")


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {timeout} s")


def training(log: Path, step: int = 2) -> Callable[[], bool]:
    return lambda: log.exists() and f"step:{step} " in log.read_text()


class StrangerNode:
    """``ray start --block --address GCS`` at :data:`STRANGER`, as another machine would."""

    def __init__(self, gcs: str, token: str | None = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="pcs-", dir="/tmp"))  # short: Ray's socket paths
        self.log = self.dir / "start.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [
                    *RAY,
                    "start",
                    "--block",
                    "--address",
                    gcs,
                    "--node-ip-address",
                    STRANGER,
                    "--num-cpus",
                    "1",
                    "--temp-dir",
                    str(self.dir),
                    "--disable-usage-stats",
                ],
                env=stranger_env(token),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def joined(self, timeout: float = 60) -> bool:
        """True once Ray says the node started; False when ``ray start`` gives up first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "Ray runtime started" in self.log.read_text(errors="replace"):
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.1)
        return False

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # ray start --block stops its daemons on SIGTERM
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        subprocess.run(["rm", "-rf", str(self.dir)], check=False)


_DRIVER = """
import json, logging, os, sys
import ray
try:
    ray.init(address=sys.argv[1], log_to_driver=False, logging_level=logging.ERROR)
    print(json.dumps({"ran": ray.get(ray.remote(num_cpus=0)(lambda: os.getpid()).remote(), timeout=30)}))
except Exception as exc:
    print(json.dumps({"refused": repr(exc)}))
"""


def stranger_runs_code(gcs: str, token: str | None = None) -> bool:
    """A driver tries to run a task on the cluster: True when the task ran."""
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, gcs],
        env=stranger_env(token),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    return bool(lines) and "ran" in json.loads(lines[-1])


def open_head(address: str) -> tuple[subprocess.Popen[bytes], str, Path]:
    """A Ray head with token auth off, as Ray below 2.52 always is: (process, GCS, temp dir)."""
    temp = Path(tempfile.mkdtemp(prefix="pco-", dir="/tmp"))
    head = subprocess.Popen(
        [
            *RAY,
            "start",
            "--block",
            "--head",
            "--port",
            str(free_port(address)),
            "--node-ip-address",
            address,
            "--num-cpus",
            "1",
            "--include-dashboard=false",
            "--disable-usage-stats",
            "--temp-dir",
            str(temp),
        ],
        env=stranger_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return head, run_gcs(address), temp


def free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def listeners() -> list[tuple[str, int, int, str]]:
    """``(address, port, pid, process)`` of every listening TCP socket, as ``ss -ltnpH`` shows it."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        cols = line.split()
        if len(cols) < 6:
            continue
        address, _, port = cols[3].rpartition(":")
        for name, pid in re.findall(r'\("([^"]*)",pid=(\d+)', line):
            rows.append((address.strip("[]"), int(port), int(pid), name))
    return rows


WILDCARD = ("*", "0.0.0.0", "::")


def as_other_user(action: Callable[[], object]) -> tuple[bool, str]:
    """Run ``action`` in a child that became :data:`OTHER_UID`: (succeeded, what it said)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to another uid, try, report, exit without running pytest's atexit
        os.close(read)
        try:
            os.setgroups([])
            os.setgid(OTHER_UID)
            os.setuid(OTHER_UID)
            said = json.dumps([True, repr(action())])
        except BaseException as exc:  # the outcome is the answer
            said = json.dumps([False, repr(exc)])
        os.write(write, said.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        text = f.read()
    os.waitpid(pid, 0)
    ok, what = json.loads(text)
    return bool(ok), str(what)
