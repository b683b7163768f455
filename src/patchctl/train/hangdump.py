"""What a hung run leaves for ``doctor`` before patchctl stops it (issue 37, req. 2).

A run that times out is killed, and with it every trace of where its ranks were waiting. Before
the kill, :func:`capture` takes:

- a ``py-spy dump`` of each Python process of the trainer's session (the driver and the Ray
  processes it started), into ``RUN_DIR/stacks/rank-R-pid-P.txt`` (``pid-P.txt`` when the process
  has no ``RANK`` in its environment), where py-spy is installed;
- ``ray status`` into ``RUN_DIR/ray-status.txt`` (its pending demands say what a stuck job waits for),
  with the trainer's interpreter's ``ray`` and environment (``RAY_ADDRESS``, the cluster's token);
- the NCCL flight recorder's dump of each rank: :func:`flight_env` has the trainer run with
  ``TORCH_NCCL_TRACE_BUFFER_SIZE`` and a dump prefix in ``RUN_DIR/nccl_trace/``; each rank's
  watchdog listens on ``RUN_DIR/nccl_trace/rank_R.pipe`` (``TORCH_NCCL_DEBUG_INFO_PIPE_FILE``) and
  writes its dump when a byte arrives there.

Both are bounded in time (each py-spy run, and the wait for the dumps), so a capture never keeps a
timed-out run alive for long; anything that fails is one line in ``stacks/capture.txt``.
"""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

from patchctl import fsutil

STACKS = "stacks"
FLIGHT = "nccl_trace"
#: the flight recorder's per-rank prefix inside FLIGHT ("rank_3", "rank_3.pipe")
PREFIX = "rank_"
#: the flight recorder's ring buffer: the last this many collectives per rank
TRACE_BUFFER = "2000"
#: seconds one py-spy dump may take, and how many run at once
PYSPY_TIMEOUT = 20.0
PARALLEL = 4
#: at most this many processes are dumped
MAX_PROCESSES = 64
#: seconds to wait for the ranks' flight recorder dumps after asking for them
FLIGHT_WAIT = 10.0
RAY_STATUS = "ray-status.txt"
#: seconds ``ray status`` may take
RAY_TIMEOUT = 20.0


def flight_env(run_dir: Path) -> dict[str, str]:
    """The variables that turn the flight recorder on with its dumps in the run directory (the
    caller's own values win: these are defaults)."""
    prefix = str(run_dir / FLIGHT / PREFIX)
    return {
        "TORCH_NCCL_TRACE_BUFFER_SIZE": TRACE_BUFFER,
        "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
        "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": prefix,
        "TORCH_NCCL_DEBUG_INFO_PIPE_FILE": prefix,
        # torch >= 2.10's names for the first and third (the old ones still work there, with a warning)
        "TORCH_FR_BUFFER_SIZE": TRACE_BUFFER,
        "TORCH_FR_DUMP_TEMP_FILE": prefix,
    }


def session_pids(sid: int, proc: Path = Path("/proc")) -> list[int]:
    """The processes of session ``sid`` (the trainer's own: it was started in a new session)."""
    out = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses
        fields = text[text.rfind(")") + 2 :].split()
        if len(fields) > 3 and fields[3] == str(sid):
            out.append(int(entry.name))
    return sorted(out)


def _python(pid: int) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    first = os.path.basename(argv[0].decode(errors="replace")) if argv and argv[0] else ""
    return first.startswith(("python", "ray::"))


def rank_of(pid: int) -> int | None:
    """The ``RANK`` the process was started with (verl's workers get theirs in their environment)."""
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    for item in env:
        if item.startswith(b"RANK="):
            value = item[5:].decode(errors="replace")
            return int(value) if value.isdigit() else None
    return None


def pyspy() -> str | None:
    """py-spy's path: on PATH, or beside this interpreter (a venv's bin)."""
    import sys

    beside = Path(sys.executable).parent / "py-spy"
    return shutil.which("py-spy") or (str(beside) if beside.is_file() else None)


def _dump(tool: str, pid: int, run_dir: Path) -> str:
    """One process's stacks into the stacks folder; "" or the reason it failed."""
    rank = rank_of(pid)
    name = f"rank-{rank}-pid-{pid}.txt" if rank is not None else f"pid-{pid}.txt"
    try:
        done = subprocess.run(
            [tool, "dump", "--pid", str(pid)], capture_output=True, timeout=PYSPY_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        return f"pid {pid}: py-spy dump took over {PYSPY_TIMEOUT:.0f} s"
    except OSError as exc:
        return f"pid {pid}: py-spy could not run ({exc.strerror})"
    if done.returncode != 0:
        return f"pid {pid}: " + (done.stderr.decode(errors="replace").strip().splitlines() or ["py-spy failed"])[-1]
    fsutil.write_into(run_dir, f"{STACKS}/{name}", done.stdout)  # never through a link planted there
    return ""


def ask_flight_recorder(folder: Path) -> int:
    """Write a byte into each rank's dump pipe (only FIFOs, never blocking); how many were asked."""
    asked = 0
    if not folder.is_dir():
        return 0
    for pipe in sorted(folder.glob(f"{PREFIX}*.pipe")):
        try:
            if not stat.S_ISFIFO(pipe.lstat().st_mode):
                continue
            fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: no rank listens there any more; ENOENT: gone
            continue
        try:
            os.write(fd, b"1")
            asked += 1
        except OSError:
            pass
        finally:
            os.close(fd)
    return asked


def ray_status(run_dir: Path, python: str | None, env: dict[str, str] | None) -> str:
    """``ray status`` of the cluster the trainer uses into the run directory; "" or why not."""
    beside = Path(python).parent / "ray" if python else None
    tool = str(beside) if beside is not None and beside.is_file() else shutil.which("ray")
    if tool is None:
        return "ray is not installed beside the trainer's interpreter: no ray status taken"
    try:
        done = subprocess.run(
            [tool, "status"], capture_output=True, timeout=RAY_TIMEOUT, check=False, env={**os.environ, **(env or {})}
        )
    except subprocess.TimeoutExpired:
        return f"ray status took over {RAY_TIMEOUT:.0f} s"
    except OSError as exc:
        return f"ray status could not run ({exc.strerror})"
    if done.returncode != 0:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["failed"])[-1]
        return f"ray status: {last[:300]}"
    fsutil.write_into(run_dir, RAY_STATUS, done.stdout)
    return ""


def _written(folder: Path) -> dict[str, int]:
    """{name: mtime in ns} of the dumps in ``folder`` (the pipes left out)."""
    out: dict[str, int] = {}
    if not folder.is_dir():
        return out
    for p in folder.iterdir():
        if p.name.endswith(".pipe"):
            continue
        try:
            out[p.name] = p.lstat().st_mtime_ns
        except OSError:
            continue
    return out


def capture(
    run_dir: Path, sid: int, tool: str | None = None, python: str | None = None, env: dict[str, str] | None = None
) -> list[str]:
    """Stacks, ``ray status`` (with the trainer's ``python`` and ``env``) and flight recorder dumps of
    the trainer's session ``sid``; the lines of what failed."""
    notes: list[str] = []
    fsutil.renew_folder(run_dir / STACKS)  # this run's stacks only
    flight = run_dir / FLIGHT
    # a dump already there may be rewritten (validate's hostdump pokes the head's ranks first): what
    # counts is a name that is new or a file written again
    before = _written(flight)
    asked = ask_flight_recorder(flight)
    tool = tool or pyspy()
    pids = [p for p in session_pids(sid) if p != os.getpid() and _python(p)][:MAX_PROCESSES]
    if tool is None:
        notes.append("py-spy is not installed (pip install py-spy): no stacks taken")
    elif pids:
        with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:
            notes += [n for n in pool.map(lambda p: _dump(tool, p, run_dir), pids) if n]
    if python is not None and (why := ray_status(run_dir, python, env)):
        notes.append(why)
    if asked:
        deadline = time.monotonic() + FLIGHT_WAIT
        while time.monotonic() < deadline:
            new = {n for n, m in _written(flight).items() if before.get(n) != m}
            if len(new) >= asked:
                break
            time.sleep(0.2)
        else:
            notes.append(
                f"{asked} rank(s) asked for their flight recorder dump; not all wrote one in {FLIGHT_WAIT:.0f} s"
            )
    if notes:
        fsutil.write_into(run_dir, f"{STACKS}/capture.txt", ("\n".join(notes) + "\n").encode("utf-8"))
    return notes
