"""Host sides that outlived a Ctrl-C: each must end with the patchctl that started it.

CI caught two after a Ctrl-C during ray-up (tests/cli/test_demo.py): a worker's supervisor still
starting when teardown looked, which then started Ray, and the head's ``form`` blocked in
``ray.init`` against a GCS being stopped. Real processes and pipes; no Ray cluster is needed."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, cast

import pytest
from validate_helpers import two_host_plan

from patchctl.remote import ssh
from patchctl.validate import remote
from patchctl.validate.host import __main__ as host_main
from patchctl.validate.host import node, procs, statedir
from patchctl.validate.host.caller import Caller
from patchctl.validate.teardown import Interrupts, Started, TornDown

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_a_supervisor_whose_caller_left_while_it_started_starts_no_ray(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read, write = os.pipe()
    os.write(write, b'{"cmd": "beat"}\n')
    os.close(write)  # patchctl was interrupted before this side read anything more
    events: list[dict[str, Any]] = []
    with os.fdopen(read, "rb", buffering=0) as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        request = {"role": "worker", "address": "127.0.0.1", "gpus": 0, "port": 6399, "gcs": "127.0.0.1:1"}
        node.run({**request, "marker": "deadbeef0101.1"}, events.append)
    assert [e["event"] for e in events] == ["stopped"]
    assert events[0]["reason"] == "patchctl left before Ray started"
    assert statedir.session_dirs("deadbeef0101.1") == []
    assert not os.path.exists(statedir.lock_path("deadbeef0101.1"))  # released and removed


def test_a_stop_sent_right_behind_the_request_is_still_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    """Teardown may send "stop" while the host side has not read its request yet: both lines then
    arrive in one read. The request is read off the descriptor, so the "stop" stays in the pipe for
    the supervisor's own check (a buffered readline swallowed it, and Ray started anyway)."""
    read, write = os.pipe()
    os.write(write, b'{"role": "worker"}\n{"cmd": "stop"}\n')  # the write end stays open: ssh lives
    try:
        with os.fdopen(read, "r") as stdin:  # as Python's own sys.stdin: text, buffered
            monkeypatch.setattr(sys, "stdin", stdin)
            assert json.loads(host_main._first_line(stdin.fileno())) == {"role": "worker"}
            assert Caller(stdin.fileno()).gone()
    finally:
        os.close(write)


def test_a_node_start_after_teardown_began_opens_nothing(tmp_path: Path) -> None:
    """A worker's start runs on a pool thread a Ctrl-C does not wait for: once teardown has
    looked, its session must not be opened (its Ray would outlive the run)."""
    plan = two_host_plan(tmp_path)
    # no session was opened: no host is asked
    started = Started(plan, cast(ssh.Connections, None), Interrupts())
    assert started.teardown(lambda note: None) == ()
    opened: list[int] = []

    def make() -> remote.Session:
        opened.append(1)
        raise AssertionError("opened after teardown")

    with pytest.raises(TornDown, match=r"^b: not started: the run is already tearing down$"):
        started.open(plan.nodes[1], make)
    assert opened == [] and started.nodes == {}


def test_every_reader_of_a_session_sees_it_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's start and teardown can wait on one session; when it ends both must hear it,
    or the start waits out its three minutes and holds patchctl's exit. A real process and pipes;
    only the ssh in front of the host side is left out."""
    plan = two_host_plan(tmp_path)
    monkeypatch.setattr(remote, "host_argv", lambda *a, **k: [sys.executable, "-c", "import sys; sys.stdin.readline()"])
    session = remote.Session(plan.cluster, plan.nodes[1], "node", {"role": "worker"})
    heard: list[str] = []

    def wait(names: list[str]) -> None:
        try:
            session.until(names, timeout=15)
            heard.append("answer")
        except remote.Ended:
            heard.append("ended")
        except queue.Empty:
            heard.append("nothing in 15 s")

    waiters = [threading.Thread(target=wait, args=(names,)) for names in (["starting"], ["stopped"])]
    for t in waiters:
        t.start()
    for t in waiters:
        t.join(timeout=30)
    session.close(wait=5)
    assert heard == ["ended", "ended"]


def test_a_ctrl_c_while_a_session_opens_is_raised_once_teardown_can_see_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The head's start opens its session on the main thread, where Ctrl-C lands. One that came
    after ssh had started but before the session was recorded left a Ray node that teardown never
    heard of. A real SIGINT to this process, through validate's own handler."""
    plan = two_host_plan(tmp_path)
    monkeypatch.setattr(remote, "host_argv", lambda *a, **k: [sys.executable, "-c", "import sys; sys.stdin.read()"])
    with Interrupts() as interrupts:
        started = Started(plan, cast(ssh.Connections, None), interrupts)

        def make() -> remote.Session:
            session = remote.Session(plan.cluster, plan.nodes[0], "node", {"role": "head"})
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)  # the handler runs here, between two lines of this function
            return session

        try:
            with pytest.raises(KeyboardInterrupt):
                started.open(plan.nodes[0], make)
            assert interrupts.seen and list(started.nodes) == [0]
        finally:
            for session in started.nodes.values():
                session.close(wait=5)


def test_reap_waits_for_a_supervisor_that_is_still_starting(root: Path) -> None:
    """The supervisor (here a stand-in holding the node's lock) starts a marked process after
    reap was asked; reap must wait for it to end and then stop what it left."""
    marker = "deadbeef0102.1"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, subprocess, sys, time\n"
            "from patchctl.validate.host import statedir, procs\n"
            f"statedir.state_root = lambda: {str(root)!r}\n"
            f"fd = statedir.hold({marker!r})\n"
            "print('held', flush=True)\n"
            "time.sleep(1.0)\n"
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
            f" env=dict(os.environ, {procs.MARKER}={marker!r}), start_new_session=True)\n"
            "print(p.pid, flush=True)\n"
            f"statedir.release({marker!r}, fd)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    replies: list[dict[str, Any]] = []
    procs.run({"marker": marker}, replies.append)
    late = int(holder.stdout.readline())
    holder.wait(timeout=30)
    try:
        assert replies == [{"event": "reply", "stopped": 1, "left": []}]
        assert procs.marked(marker) == []
    finally:
        for pid in procs.marked(marker):
            os.kill(pid, 9)
    assert late > 0


def test_form_ends_when_patchctl_closes_its_input_even_inside_ray_init(tmp_path: Path) -> None:
    """``ray.init`` against a GCS that is not there retries for minutes; closing stdin ends it."""
    pytest.importorskip("ray")
    request = {"gcs": "127.0.0.1:9", "expected": [{"address": "127.0.0.1", "gpus": 0}], "timeout": 300}
    form = subprocess.Popen(
        [sys.executable, "-m", "patchctl.validate.host", "form"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": SRC},
        cwd=tmp_path,
    )
    assert form.stdin is not None
    form.stdin.write((json.dumps(request) + "\n").encode())
    form.stdin.flush()
    time.sleep(3)  # well inside ray.init's connection attempts
    assert form.poll() is None
    form.stdin.close()
    try:
        form.wait(timeout=20)
    except subprocess.TimeoutExpired:
        form.kill()
        form.wait()
        pytest.fail("form outlived its caller")
