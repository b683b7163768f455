"""Which processes and temp dirs are a run's own: the exact marker, never a prefix of another
run's or node's (``run.1`` is not ``run.10``), checked on real processes (#18, req. 7)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchctl.validate.host import procs, statedir


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator:
    """``spawn(marker, name=None, args=())``: a sleeping process carrying ``MARKER=marker`` (run
    as ``name`` when given, as a raylet is; ``args`` of ``("-c", script)`` run that script, which
    prints ``ready`` once set up); all are ended and reaped after the test."""
    started: list[subprocess.Popen] = []

    def start(marker: str, name: str | None = None, args: tuple[str, ...] = ()) -> subprocess.Popen:
        exe = sys.executable
        if name is not None:  # /proc/PID/comm is the name the program was started by
            link = tmp_path / f"bin-{len(started)}" / name
            link.parent.mkdir()
            link.symlink_to(sys.executable)
            exe = str(link)
        script = args if args[:1] == ("-c",) else ("-c", "import time; time.sleep(60)", *args)
        p = subprocess.Popen(
            [exe, *script],
            env={**os.environ, procs.MARKER: marker},
            stdout=subprocess.PIPE if args[:1] == ("-c",) else None,
        )
        if p.stdout is not None:
            assert p.stdout.readline() == b"ready\n"  # its SIGTERM handler is in place
        started.append(p)
        deadline = time.monotonic() + 10
        while p.pid not in procs.marked(marker) and time.monotonic() < deadline:
            time.sleep(0.02)
        return p

    yield start
    for p in started:
        p.kill()
        p.wait()


def test_marked_is_the_exact_marker_not_a_prefix(spawn) -> None:
    run = secrets.token_hex(4)
    one, ten, other = spawn(f"{run}.1"), spawn(f"{run}.10"), spawn(f"{run}x.1")
    assert procs.marked(f"{run}.1") == [one.pid]
    assert procs.marked(f"{run}.10") == [ten.pid]
    assert procs.marked(f"{run}.") == [] and procs.marked(run) == []
    stopped, left = procs.stop_marked(f"{run}.1", grace=2.0)
    assert (stopped, left) == (1, [])
    assert one.wait(timeout=5) is not None
    assert ten.poll() is None and other.poll() is None, "another node's or run's process was stopped"


def _state(pid: int) -> bytes:
    return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]


def test_a_dead_raylet_not_yet_reaped_is_not_a_node(spawn) -> None:
    """A zombie keeps its name (a container's init may never reap it) but is no Ray node."""
    p = spawn(f"{secrets.token_hex(4)}.1", "raylet", ("--node_ip_address=127.9.9.3",))
    assert p.pid in {r["pid"] for r in procs.raylets()}
    p.kill()
    deadline = time.monotonic() + 5
    # wait for the zombie state itself: the command line empties while the process still exits
    while _state(p.pid) != b"Z" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert Path(f"/proc/{p.pid}/comm").read_text().strip() == "raylet"  # still there, as a zombie
    assert p.pid not in {r["pid"] for r in procs.raylets()}


def test_raylets_of_this_run_are_excluded_by_its_prefix_only(spawn) -> None:
    run = secrets.token_hex(4)
    ours = spawn(f"{run}.1", "raylet", ("--node_ip_address=127.9.9.1", "--gcs-address=127.9.9.1:6379"))
    theirs = spawn(f"{run}0.1", "raylet", ("--node_ip_address=127.9.9.2", "--session_dir=/tmp/s"))
    spawn(f"{run}.2", "not-raylet")
    found = {r["pid"]: r for r in procs.raylets()}
    assert found[ours.pid] == {"pid": ours.pid, "address": "127.9.9.1", "gcs": "127.9.9.1:6379", "session": ""}
    assert found[theirs.pid]["address"] == "127.9.9.2" and found[theirs.pid]["session"] == "/tmp/s"
    assert len([r for r in found.values() if r["address"].startswith("127.9.9.")]) == 2
    kept = {r["pid"] for r in procs.raylets(exclude=f"{run}.")}
    assert theirs.pid in kept and ours.pid not in kept


def test_temp_dirs_are_a_nodes_own_and_only_dead_nodes_are_swept(spawn, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(statedir, "state_root", lambda: str(tmp_path))
    run = secrets.token_hex(4)
    one, ten = tmp_path / f"{run}-1-a", tmp_path / f"{run}-10-b"
    fresh, odd = tmp_path / f"{run}-3-c", tmp_path / f"{run}-x-d"
    for d in (one, ten, fresh, odd):
        d.mkdir()
        (d / statedir.BORN).write_text(f"{time.time()}\n")  # no process older than this dir can be its node's
    assert statedir.session_dirs(f"{run}.1") == [str(one)]
    for d in (one, ten, odd):
        os.utime(d, (time.time() - 120, time.time() - 120))
    spawn(f"{run}.10")
    assert procs.sweep_stale(older_than=60) == [str(one)]  # node 10 lives on; node 3's dir is new
    assert not one.exists() and ten.is_dir() and fresh.is_dir() and odd.is_dir()


#: a process that handles SIGTERM: after ``delay`` seconds it runs ``code`` (exit, or carry on)
_ON_TERM = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *_: (time.sleep({delay}), {code}))\n"
    "print('ready', flush=True)\n"
    "while True: time.sleep(0.05)\n"
)


def test_stop_gives_a_process_its_grace_before_sigkill(spawn) -> None:
    """SIGTERM first: a process that shuts down cleanly within the grace is never SIGKILLed."""
    run = secrets.token_hex(4)
    graceful = spawn(f"{run}.1", args=("-c", _ON_TERM.format(delay=0.5, code="sys.exit(7)")))
    assert procs.stop_marked(f"{run}.1", grace=5.0) == (1, [])
    assert graceful.wait(timeout=5) == 7, "killed before its grace was over"


def test_stop_kills_a_process_that_ignores_sigterm(spawn) -> None:
    run = secrets.token_hex(4)
    stubborn = spawn(f"{run}.1", args=("-c", _ON_TERM.format(delay=0, code="None")))
    assert procs.stop_marked(f"{run}.1", grace=0.5) == (1, [])
    assert stubborn.wait(timeout=5) == -9


def test_reap_stops_the_node_removes_its_temp_dirs_and_replies(spawn, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(statedir, "state_root", lambda: str(tmp_path))
    run = secrets.token_hex(4)
    node, other = spawn(f"{run}.1"), spawn(f"{run}.10")
    mine, theirs = tmp_path / f"{run}-1-a", tmp_path / f"{run}-10-a"
    for d in (mine, theirs):
        (d / "sockets").mkdir(parents=True)
    replies: list[dict] = []
    assert procs.run({"marker": f"{run}.1"}, replies.append) == 0
    assert replies == [{"event": "reply", "stopped": 1, "left": []}]
    assert node.wait(timeout=5) is not None and other.poll() is None
    assert not mine.exists() and theirs.is_dir()


def test_a_process_that_is_gone_is_neither_alive_nor_marked() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert procs._alive(gone.pid) is False and procs._marker_of(gone.pid, "") is False
