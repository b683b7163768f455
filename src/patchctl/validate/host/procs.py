"""Which processes on this host are ours, and which Ray nodes were here before us (Linux /proc).

Every process validate starts carries ``PATCHCTL_VALIDATE_RUN=<run>.<node>`` in its environment,
and Ray passes its raylet's environment to the workers it spawns (which start sessions of their
own, so a process group would miss them). Stopping "ours" is therefore: every live process
whose environment holds that exact marker — never ``ray stop``, which ends every Ray here.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import stat
import time
from collections.abc import Callable
from typing import Any

from patchctl.validate.host import statedir

MARKER = "PATCHCTL_VALIDATE_RUN"


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _alive(pid: int) -> bool:
    """Running and not a zombie (a container's init may never reap one)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def marked(value: str, unknown: float | None = None) -> list[int]:
    """Live processes whose environment carries ``MARKER=value`` (ours to stop).

    ``unknown`` (a time): also every live process started since then whose environment cannot be
    read although it could be one of ours (our uid, or we are root). Stopping skips those, but
    the sweep must not take "cannot read" for "gone": that is how one user's start once deleted
    another's live run. A process of another uid is never ours (Ray's processes keep the uid
    that started them), nor one started before the node's temp dir was made.
    """
    needle = f"{MARKER}={value}".encode()
    out = []
    for pid in _pids():
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except PermissionError:
            if unknown is not None and _alive(pid) and _could_be_ours(pid, unknown):
                out.append(pid)
            continue
        except OSError:
            continue  # gone, or a kernel thread
        if needle in env and _alive(pid):
            out.append(pid)
    return out


def _could_be_ours(pid: int, since: float) -> bool:
    try:
        if os.getuid() != 0 and os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return False
        return _started(pid) >= since - 1.0  # clock ticks are coarse: a second of slack
    except (OSError, ValueError, IndexError):
        return False


def _started(pid: int) -> float:
    """When ``pid`` started, in seconds since the epoch (/proc/PID/stat field 22 after boot)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        ticks = int(f.read().rsplit(b")", 1)[1].split()[19])
    with open("/proc/stat", "rb") as f:
        boot = next(int(line.split()[1]) for line in f if line.startswith(b"btime "))
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def stop_marked(value: str, grace: float = 3.0) -> tuple[int, list[int]]:
    """SIGTERM every process of ``value``, SIGKILL what is left after ``grace``; (stopped, left)."""
    found = marked(value)
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
        for pid in marked(value):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
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
        out.append(
            {
                "pid": pid,
                "address": flags.get("--node_ip_address", ""),
                "gcs": flags.get("--gcs-address", ""),
                "session": flags.get("--session_dir", ""),
            }
        )
    return out


def _marker_of(pid: int, prefix: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f"{MARKER}={prefix}".encode() in f.read()
    except OSError:
        return False


def sweep_stale(older_than: float = 60.0) -> list[str]:
    """Remove the temp dirs of earlier runs' nodes whose processes are provably gone: a node whose
    host went down mid-run, or whose supervisor was killed, could not remove its own.

    Only inside this user's private folder, only folders this user owns (never through a link),
    and only when no live process carries the marker and none that could be ours hides its
    environment. Returns what was removed.
    """
    root = statedir.state_root()
    try:
        st = os.lstat(root)
    except OSError:
        return []
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        return []
    removed = []
    for d in glob.glob(os.path.join(root, "*-*-*")):
        parts = os.path.basename(d).split("-")
        if len(parts) < 3 or not parts[1].isdigit():
            continue
        try:
            info = os.lstat(d)
            if (
                not stat.S_ISDIR(info.st_mode)
                or info.st_uid != os.getuid()
                or time.time() - info.st_mtime < older_than
                or marked(f"{parts[0]}.{parts[1]}", unknown=statedir.born(d))
            ):
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
    # the node's supervisor may still be starting (it has not read its stdin yet): let it see
    # end-of-file and stop its own Ray first, or it would start Ray after this sweep had looked
    statedir.wait_released(value, float(request.get("wait", 40)))
    stopped, left = stop_marked(value)
    for d in statedir.session_dirs(value):
        shutil.rmtree(d, ignore_errors=True)
    emit({"event": "reply", "stopped": stopped, "left": left})
    return 0
