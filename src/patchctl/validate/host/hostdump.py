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
  listens (node.py has every raylet start its workers with the flight recorder on, dumping there),
  then, after a bounded wait (:data:`FLIGHT_WAIT`) for the ranks to write, the dumps themselves:
  regular files named ``rank_R`` only (no link, no pipe), at most :data:`MAX_DUMPS` of them, each
  whole and at most :data:`PER_DUMP` bytes (a cut pickle reads as nothing) and all
  :data:`DUMPS_PER_HOST` bytes, base64 in the reply;
- the node's Ray session logs (``*.log``, ``*.err``, ``*.out``), newest first, each cut to its last
  :data:`PER_FILE` bytes and all of them to :data:`PER_HOST` bytes.

Everything comes back in the one reply line; patchctl writes it into ``RUN_DIR/hosts/HOST/``.
Only the processes and files of this run are read: the marker names them, and the temp dirs are
this user's own 0700 folder (statedir.py).
"""

from __future__ import annotations

import base64
import concurrent.futures
import os
import re
import stat
import subprocess
import time
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
#: seconds to wait for this host's ranks to write their flight recorder dumps once asked (the
#: py-spy dumps run meanwhile)
FLIGHT_WAIT = 8.0
#: bytes of one flight recorder dump (2000 entries with frames are a few MB), of all of a host's,
#: and how many dumps
PER_DUMP = 8 * 1024 * 1024
DUMPS_PER_HOST = 24 * 1024 * 1024
MAX_DUMPS = 32
#: a dump's name as the flight recorder writes it: the prefix and the rank
DUMP_NAME = re.compile(rf"^{hangdump.PREFIX}[0-9]{{1,6}}$")


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


def _dump_files(folder: Path) -> dict[str, os.stat_result]:
    """The flight recorder dumps in ``folder``: regular files named ``rank_R``, never a link."""
    out: dict[str, os.stat_result] = {}
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return out
    for name in names:
        if not DUMP_NAME.match(name):
            continue
        try:
            st = os.lstat(folder / name)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out[name] = st
    return out


def wait_for_dumps(folder: Path, asked: int, since: float, wait: float = FLIGHT_WAIT) -> bool:
    """Wait (at most ``wait`` seconds) until ``asked`` dumps were written after ``since``; whether they were."""
    deadline = time.monotonic() + wait
    while True:
        fresh = [n for n, st in _dump_files(folder).items() if st.st_mtime >= since]
        if len(fresh) >= asked:
            # a dump is written in one go, but give the last one a moment to be complete
            time.sleep(0.2)
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)


def flight_dumps(folder: Path, notes: list[str]) -> list[dict[str, Any]]:
    """The dumps in ``folder`` within the bounds, base64; what was left out goes into ``notes``."""
    out: list[dict[str, Any]] = []
    left = DUMPS_PER_HOST
    found = sorted(_dump_files(folder).items())
    if len(found) > MAX_DUMPS:
        notes.append(f"{len(found)} flight recorder dumps in {folder}: only the first {MAX_DUMPS} were sent")
    for name, st in found[:MAX_DUMPS]:
        if st.st_size > PER_DUMP or st.st_size > left:
            notes.append(
                f"{folder / name}: {st.st_size} bytes, over what is sent of a flight recorder dump: left there"
            )
            continue
        try:
            fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read(PER_DUMP + 1)
        except OSError:
            continue
        finally:
            os.close(fd)
        if len(data) > min(PER_DUMP, left):
            notes.append(f"{folder / name}: grew past what is sent of a flight recorder dump: left there")
            continue
        left -= len(data)
        out.append({"name": name, "data": base64.b64encode(data).decode("ascii")})
    return out


def run(request: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> int:
    marker = str(request["marker"])
    notes: list[str] = []
    root = Path.cwd().resolve()
    run_dir = (root / str(request.get("run_rel") or ".")).resolve()
    flight = run_dir / hangdump.FLIGHT
    inside = run_dir.is_relative_to(root)
    poked = time.time() - 1.0  # a dump written from now on is this request's (mtime granularity aside)
    asked = hangdump.ask_flight_recorder(flight) if inside else 0
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
    dumps: list[dict[str, Any]] = []
    if asked and not wait_for_dumps(flight, asked, poked):
        notes.append(
            f"{asked} rank(s) here asked for their flight recorder dump; not all wrote one in {FLIGHT_WAIT:.0f} s"
        )
    if inside and flight.is_dir() and not flight.is_symlink():
        dumps = flight_dumps(flight, notes)
    emit({"event": "reply", "stacks": stacks, "logs": logs(marker), "flight": dumps, "notes": notes})
    return 0
