"""What the step following a job's output (slurm/relay.py ``Stream``) does with its own process,
fast and without Slurm. That step is a long-lived child (ssh to the login node, running srun,
running ``tail -F``) that patchctl must always be able to end, that must never hold patchctl's
exit up, and that a Ctrl-C meant for patchctl must not cut short. test_relay_steps.py runs Stream
through the real ssh and srun into a running Slurm job; here the hop to the login node and the
step are left out (``login.argv`` gives the step's own command, a real ``tail -F`` on this
machine), so each test is about the child process itself: its pipes, its session, real signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from patchctl.clusters import Cluster, Host
from patchctl.slurm import login, relay

CLUSTER = Cluster("hpc", (Host("login", "/r"),), "/r", Path("patchctl.toml"))

#: ``login.argv`` for these tests: the step's own command (``tail ...``), run here
LOCAL = "lambda cluster, words: list(words[list(words).index('tail'):])"

#: a program that opens a Stream the way validate does, then does what argv[3] says (the tests
#: below start it as a process of its own: its exit and its Ctrl-C are what they check)
PROGRAM = f"""
import subprocess, sys, time
from pathlib import Path
from patchctl.clusters import Cluster, Host
from patchctl.slurm import login, relay

login.argv = {LOCAL}
stream = relay.Stream(Cluster("hpc", (Host("login", "/r"),), "/r", Path("patchctl.toml")), "7", "n1", sys.argv[1], 0)
got, deadline = "", time.monotonic() + 30
while got != "started\\n":
    if time.monotonic() > deadline:
        sys.exit("the stream read " + repr(got))
    got += stream.drain()[0]
    time.sleep(0.05)
if sys.argv[2] == "leave":  # patchctl ending without closing it (an error on the way out)
    print(stream.child.pid, flush=True)
    sys.exit(0)
try:
    print(stream.child.pid, flush=True)  # inside: the Ctrl-C may come as soon as this is read
    time.sleep(60)
except KeyboardInterrupt:
    try:
        stream.child.wait(timeout=2)
        print("stream ended", flush=True)
    except subprocess.TimeoutExpired:
        print("stream running", flush=True)
    stream.close()
"""


def gone(pid: int) -> bool:
    """No such process, not even a zombie waiting to be reaped (which still has its /proc entry)."""
    return not Path(f"/proc/{pid}").exists()


def ended(pid: int) -> bool:
    """Gone, or a zombie left to a parent that is not patchctl (init, once patchctl exited)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def read_until(stream: relay.Stream, want: str) -> str:
    got = ""
    deadline = time.monotonic() + 20
    while got != want and time.monotonic() < deadline:
        got += stream.drain()[0]
        time.sleep(0.05)
    return got


def open_local(monkeypatch: pytest.MonkeyPatch, path: Path, wrap: Sequence[str] = ()) -> relay.Stream:
    """A Stream of ``path`` whose child is tail here (``wrap``: words that run it)."""
    monkeypatch.setattr(login, "argv", lambda cluster, words: [*wrap, *words[words.index("tail") :]])
    return relay.Stream(CLUSTER, "7", "n1", str(path), 0)


def test_close_asks_the_step_to_end_and_reaps_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "job.out"
    out.write_text("step 1\n")
    stream = open_local(monkeypatch, out)
    assert read_until(stream, "step 1\n") == "step 1\n"
    pid = stream.child.pid
    stream.close()
    # SIGTERM first (ssh then closes its session, and srun passes it on to the step), and the
    # child waited for: no zombie left for each stream a long validate opens and closes
    assert stream.child.returncode == -signal.SIGTERM
    assert gone(pid) and not stream.alive


def test_a_step_that_ignores_sigterm_is_still_ended(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "job.out"
    out.write_text("step 1\n")
    # trap '' TERM: SIGTERM ignored, which exec keeps (a step stuck on a dead filesystem, an ssh
    # started with it ignored, as a background job of some shells is)
    stream = open_local(monkeypatch, out, ["sh", "-c", "trap '' TERM; exec \"$@\"", "sh"])
    assert read_until(stream, "step 1\n") == "step 1\n"
    pid = stream.child.pid
    closing = threading.Thread(target=stream.close, daemon=True)
    closing.start()
    closing.join(timeout=60)
    try:
        assert not closing.is_alive(), "close() never returned: the step ignoring SIGTERM was never killed"
        assert stream.child.returncode == -signal.SIGKILL  # the fallback, after the grace period
        assert gone(pid) and not stream.alive
    finally:
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)


def run_program(tmp_path: Path, how: str) -> subprocess.Popen[str]:
    (tmp_path / "job.out").write_text("started\n")
    (tmp_path / "program.py").write_text(PROGRAM)
    # its own session: the test's signals reach it (and what it started in its group) alone, as
    # a terminal's Ctrl-C reaches the foreground process group alone
    return subprocess.Popen(
        [sys.executable, str(tmp_path / "program.py"), str(tmp_path / "job.out"), how],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def test_patchctl_exits_with_a_stream_still_open(tmp_path: Path) -> None:
    program = run_program(tmp_path, "leave")
    try:
        out, err = program.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(program.pid, signal.SIGKILL)
        program.communicate()
        pytest.fail("patchctl never exited: a thread reading the stream's pipes held it up")
    assert program.returncode == 0, err
    pid = int(out.split()[0])
    deadline = time.monotonic() + 10
    while not ended(pid) and time.monotonic() < deadline:  # ended by its parent-death signal
        time.sleep(0.05)
    assert ended(pid)


def test_a_ctrl_c_reaches_patchctl_not_the_stream(tmp_path: Path) -> None:
    program = run_program(tmp_path, "wait")
    try:
        assert program.stdout is not None
        pid = int(program.stdout.readline())
        os.killpg(program.pid, signal.SIGINT)  # what a Ctrl-C at the terminal does
        out, err = program.communicate(timeout=30)
    finally:
        if program.poll() is None:
            os.killpg(program.pid, signal.SIGKILL)
            program.communicate()
    # the stream follows on while patchctl decides what the Ctrl-C means (its own session)
    assert out == "stream running\n", (out, err)
    assert program.returncode == 0 and gone(pid), err


def test_what_the_step_writes_as_it_ends_is_read_before_close_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """validate's finish() drains right after close(): the step's last output (srun and ssh pass
    on what the tasks wrote as they end) must be read by then, not after."""
    out = tmp_path / "job.out"
    out.write_text("step 1\n")
    # a process of the step that writes its last line a second after tail is ended
    stream = open_local(monkeypatch, out, ["sh", "-c", '(sleep 1; echo "last line") & exec "$@"', "sh"])
    assert read_until(stream, "step 1\n") == "step 1\n"
    stream.close()
    assert stream.drain()[0] == "last line\n"
