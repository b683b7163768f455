"""Which processes on this host are ours, and which Ray nodes were here before us (Linux /proc).

Every process validate starts carries ``PATCHCTL_VALIDATE_RUN=<run>.<node>`` in its environment,
and Ray passes its raylet's environment to the workers it spawns (which start sessions of their
own, so a process group would miss them). Stopping "ours" is therefore: every live process
whose environment holds that exact marker — never ``ray stop``, which ends every Ray here.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from typing import Any

MARKER = "PATCHCTL_VALIDATE_RUN"
#: per-node temp dirs (Ray's --temp-dir): short, since Ray's socket paths must stay < 108 bytes
SESSION_PREFIX = "pcv-"


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _alive(pid: int) -> bool:
    """Running and not a zombie (a container's init may never reap one)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def marked(value: str) -> list[int]:
    """Live processes whose environment carries ``MARKER=value`` (ours to stop)."""
    needle = f"{MARKER}={value}".encode()
    out = []
    for pid in _pids():
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue  # another user's process, or gone: not ours either way
        if needle in env and _alive(pid):
            out.append(pid)
    return out


def stop_marked(value: str, grace: float = 3.0) -> tuple[int, list[int]]:
    """SIGTERM every process of ``value``, SIGKILL what is left after ``grace``; (stopped, left)."""
    found = marked(value)
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
        for pid in marked(value):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and marked(value):
            time.sleep(0.05)
        if not marked(value):
            break
    left = marked(value)
    return len(found) - len(left), left


def raylets(exclude: str | None = None) -> list[dict[str, Any]]:
    """Ray nodes on this machine: each raylet's pid, node IP and the cluster (GCS) it belongs to.
    ``exclude``: a marker prefix (``<run>.``) whose raylets are this run's own."""
    out = []
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() != "raylet":
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        if not _alive(pid) or (exclude and _marker_of(pid, exclude)):
            continue
        flags = dict(a.split("=", 1) for a in args if a.startswith("--") and "=" in a)
        out.append({"pid": pid, "address": flags.get("--node_ip_address", ""), "gcs": flags.get("--gcs-address", ""),
                    "session": flags.get("--session_dir", "")})
    return out


def _marker_of(pid: int, prefix: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f"{MARKER}={prefix}".encode() in f.read()
    except OSError:
        return False


def session_prefix(value: str) -> str:
    """The temp-dir name prefix of one node of one run (``value`` is its marker, ``run.node``)."""
    return SESSION_PREFIX + value.replace(".", "-") + "-"


def session_dirs(value: str) -> list[str]:
    return glob.glob(os.path.join(tempfile.gettempdir(), session_prefix(value) + "*"))


def sweep_stale(older_than: float = 60.0) -> list[str]:
    """Remove the temp dirs of earlier runs' nodes that no live process carries the marker of any
    more: a node whose host went down mid-run, or whose supervisor was killed, could not remove
    its own. Returns what was removed."""
    removed = []
    for d in glob.glob(os.path.join(tempfile.gettempdir(), SESSION_PREFIX + "*-*-*")):
        parts = os.path.basename(d)[len(SESSION_PREFIX):].split("-")
        if len(parts) < 3 or not parts[1].isdigit():
            continue
        try:
            if time.time() - os.stat(d).st_mtime < older_than or marked(f"{parts[0]}.{parts[1]}"):
                continue
        except OSError:
            continue
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    return removed


def run(request: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> int:
    """``reap``: stop whatever of this node's run is still alive, remove its temp dirs, report.

    Used at teardown where the node's own session is gone (Ctrl-C reached ssh, the connection
    dropped): the node's supervisor stops Ray on end-of-file by itself; this confirms it.
    """
    value = request["marker"]
    stopped, left = stop_marked(value)
    for d in session_dirs(value):
        shutil.rmtree(d, ignore_errors=True)
    emit({"event": "reply", "stopped": stopped, "left": left})
    return 0
