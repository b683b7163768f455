"""``hostdump``: what one host of a hung run leaves for ``doctor`` (issue 37, req. 2).

The head's ``train`` dumps the trainer's own processes before it stops a run that timed out
(patchctl.train.hangdump), but verl's ranks are Ray workers spread over every host, started by
each host's raylet and not in the trainer's session; and each node's Ray logs live in its
private temp dir, which the node removes when it stops. So before the head kills its trainer,
validate asks every host for this, over the ssh connection it already holds:

- a ``py-spy dump`` of each Ray worker of this run on this host (a process carrying the run's
  marker whose title is ``ray::...``; idle workers and Ray's agents run no task and are left out), each
  bounded by :data:`hangdump.PYSPY_TIMEOUT`;
- a byte into each NCCL flight recorder pipe of the run folder here, where a rank of this host
  listens (the dumps stay on the host: they name it in ``capture.txt``);
- the node's Ray session logs (``*.log``, ``*.err``, ``*.out``), newest first, each cut to its last
  :data:`PER_FILE` bytes and all of them to :data:`PER_HOST` bytes.

Everything comes back in the one reply line; patchctl writes it into ``RUN_DIR/hosts/HOST/``.
Only the processes and files of this run are read: the marker names them, and the temp dirs are
this user's own 0700 folder (statedir.py).
"""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from patchctl.train import hangdump
from patchctl.validate.host import procs, statedir

#: bytes kept of one log file (its end: where a hang or a crash shows), and of all of a host's
PER_FILE = 256 * 1024
PER_HOST = 2 * 1024 * 1024
#: at most this many log files per host
MAX_FILES = 60
LOG_SUFFIXES = (".log", ".err", ".out")
#: Ray's own processes with a ``ray::`` title, which run no task of the job: an idle worker and the
#: node's agents (their stacks would sit beside the ranks' as if they were ranks)
NOT_RANKS = ("ray::IDLE", "ray::DashboardAgent", "ray::RuntimeEnvAgent")


def workers(marker: str) -> list[tuple[int, str]]:
    """(pid, title) of the run's Ray workers on this host that are doing something."""
    out = []
    for pid in procs.marked(marker):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        title = argv[0].decode(errors="replace").strip() if argv else ""
        if title.startswith("ray::") and not title.startswith(NOT_RANKS):
            out.append((pid, title[:200]))
    return sorted(out)[: hangdump.MAX_PROCESSES]


def dump(tool: str, pid: int) -> tuple[str, str]:
    """(py-spy's output, "") or ("", why not) for one process."""
    try:
        done = subprocess.run(
            [tool, "dump", "--pid", str(pid)], capture_output=True, timeout=hangdump.PYSPY_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        return "", f"pid {pid}: py-spy dump took over {hangdump.PYSPY_TIMEOUT:.0f} s"
    except OSError as exc:
        return "", f"pid {pid}: py-spy could not run ({exc.strerror})"
    if done.returncode != 0:
        return "", f"pid {pid}: " + (done.stderr.decode(errors="replace").strip().splitlines() or ["py-spy failed"])[-1]
    return done.stdout.decode("utf-8", errors="replace"), ""


def logs(marker: str) -> list[dict[str, Any]]:
    """The node's Ray logs, newest first, cut to the bounds; paths relative to its temp dir."""
    found: list[tuple[float, str, str]] = []
    for top in statedir.session_dirs(marker):
        for dirpath, _dirs, files in os.walk(top):
            for name in files:
                path = os.path.join(dirpath, name)
                if not name.endswith(LOG_SUFFIXES) or os.path.islink(path):
                    continue
                try:
                    found.append((os.stat(path).st_mtime, path, os.path.relpath(path, top)))
                except OSError:
                    continue
    out, left = [], PER_HOST
    for _mtime, path, rel in sorted(found, reverse=True)[:MAX_FILES]:
        if left <= 0:
            break
        want = min(PER_FILE, left)
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                f.seek(max(0, size - want))
                data = f.read(want)
        except OSError:
            continue
        left -= len(data)
        out.append({"path": rel, "text": data.decode("utf-8", errors="replace"), "cut": size > len(data)})
    return out


def run(request: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> int:
    marker = str(request["marker"])
    notes: list[str] = []
    root = Path.cwd().resolve()
    run_dir = (root / str(request.get("run_rel") or ".")).resolve()
    flight = run_dir / hangdump.FLIGHT
    if run_dir.is_relative_to(root) and (asked := hangdump.ask_flight_recorder(flight)):
        notes.append(f"{asked} rank(s) here were asked for their flight recorder dump: they write it into {flight}")
    stacks: list[dict[str, Any]] = []
    tool = hangdump.pyspy()
    found = workers(marker)
    if tool is None:
        notes.append("py-spy is not installed here (pip install py-spy): no stacks taken")
    elif not found:
        notes.append("no busy Ray worker of this run was running here")
    else:
        with concurrent.futures.ThreadPoolExecutor(hangdump.PARALLEL) as pool:
            for (pid, title), (text, why) in zip(found, pool.map(lambda w: dump(tool, w[0]), found), strict=True):
                if why:
                    notes.append(why)
                else:
                    stacks.append({"pid": pid, "rank": hangdump.rank_of(pid), "title": title, "text": text})
    emit({"event": "reply", "stacks": stacks, "logs": logs(marker), "notes": notes})
    return 0
