"""The walk's git commands run by a helper process (issue 38 req 8): the same answers as git run
the usual way, and nothing left running when patchctl is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from patchctl import git, proc
from patchctl.errors import CommandFailed
from patchctl.patchsets.history import runner as runner_module
from patchctl.patchsets.history.runner import Runner

ROOT = Path(__file__).resolve().parents[3]


def _repo(tmp: Path) -> Path:
    repo = tmp / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@x"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for i in range(3):
        (repo / "a.py").write_text("".join(f"line {k}\n" for k in range(i + 3)))
        subprocess.run(["git", "-C", str(repo), "add", "a.py"], check=True)
        subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", f"step {i} (#{i + 10})"], check=True, env=env)
    return repo


def test_the_helper_answers_as_git_run_does(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    runner = Runner()
    try:
        for args in (("log", "--format=%H %s", "--name-status"), ("rev-parse", "HEAD~1"), ("cat-file", "-p", "HEAD")):
            rc, out = runner.run(repo, *args)
            assert (rc, out.decode()) == (0, git.run(repo, *args).stdout)
        rc, out = runner.run(repo, "rev-parse", "--verify", "-q", "nosuchref", check=False)
        assert (rc, out) == (1, b"")
        with pytest.raises(CommandFailed, match="nosuchref"):
            runner.run(repo, "rev-parse", "--verify", "nosuchref")
        (tmp_path / "old").write_text("a\nb\nc\n")
        (tmp_path / "mine").write_text("a\nB\nc\n")
        (tmp_path / "new").write_text("a\nbb\nc\n")
        rc, out = runner.run(tmp_path, "merge-file", "-p", "-q", "mine", "old", "new", check=False)
        assert rc == 1 and b"<<<<<<<" in out  # a conflict is git's own answer, markers and all
    finally:
        runner.close()


def test_a_killed_patchctl_leaves_neither_the_helper_nor_its_git_running(tmp_path: Path) -> None:
    """patchctl is killed (-9) while the helper's git is blocked (reading a FIFO no one writes):
    the helper dies with patchctl, and the git it started dies with the helper."""
    _blocking_merge(tmp_path)
    script = (
        "import sys, threading, time\n"
        "from pathlib import Path\n"
        "from patchctl.patchsets.history.runner import Runner\n"
        "r = Runner()\n"
        "r.run(Path(sys.argv[1]), '--version')\n"
        "print(r._child.pid, flush=True)\n"
        "threading.Thread(target=r.run, args=(Path(sys.argv[1]), 'merge-file', '-p', 'mine', 'old', 'new'),"
        " kwargs={'check': False}, daemon=True).start()\n"
        "time.sleep(60)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    owner = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, env=env)
    assert owner.stdout is not None
    helper = int(owner.stdout.readline())
    child = _child_of(helper)
    assert Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")[0].endswith(b"git")
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    assert _gone(helper) and _gone(child)


def _blocking_merge(folder: Path) -> Path:
    """``merge-file -p mine old new`` in ``folder`` blocks: ``mine`` is a FIFO no one writes yet."""
    fifo = folder / "mine"
    os.mkfifo(fifo)
    (folder / "old").write_text("a\n")
    (folder / "new").write_text("a\n")
    return fifo


def _child_of(pid: int) -> int:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        # setpriv execs git in place: the child is git once its command line says so
        if found and Path(f"/proc/{found[0]}/cmdline").read_bytes().split(b"\0")[0].endswith(b"git"):
            return int(found[0])
        time.sleep(0.05)
    raise AssertionError(f"the helper {pid} started no git")


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            return True
        if state == "Z":  # dead, not yet reaped by init
            return True
        time.sleep(0.05)
    return False


def test_a_helper_killed_on_its_own_takes_its_git_with_it(tmp_path: Path) -> None:
    """Only the helper is killed (-9), while its git is blocked: patchctl finds the helper gone,
    kills the git it left, and runs the command the usual way instead."""
    fifo = _blocking_merge(tmp_path)
    runner = Runner()
    answers: list[tuple[int, bytes]] = []
    try:
        runner.run(tmp_path, "--version")
        killed = runner._child
        assert killed is not None
        helper = killed.pid
        merge = threading.Thread(
            target=lambda: answers.append(runner.run(tmp_path, "merge-file", "-p", "mine", "old", "new", check=False)),
            daemon=True,
        )
        merge.start()
        blocked = _child_of(helper)
        os.kill(helper, signal.SIGKILL)
        assert _gone(blocked), f"the helper's git {blocked} outlived the helper"
        # the command again, the usual way: it now waits on the FIFO in its turn
        fd = _open_for_writing(fifo)
        os.write(fd, b"a\n")
        os.close(fd)
        merge.join(20)
        assert answers == [(0, b"")]  # git sizes "mine" by stat, and a FIFO's size is 0
        assert killed.returncode == -signal.SIGKILL  # reaped, not left a zombie
    finally:
        _release_readers(fifo)  # a git left blocked (the bug this test is for) ends, reading nothing
        runner.close()


def _open_for_writing(fifo: Path) -> int:
    """The FIFO's write end, once a reader has opened it (an open with none fails at once)."""
    deadline = time.monotonic() + 20
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _release_readers(fifo: Path) -> None:
    """Open and close the FIFO's write end while anyone waits to read it."""
    for _ in range(20):
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            return
        time.sleep(0.1)


def test_every_command_goes_through_the_one_helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The helper is the point (no fork of patchctl per command): the usual way is not taken while
    the helper answers, and one helper serves every command."""
    repo = _repo(tmp_path)

    def usual_way(*args: object, **kwargs: object) -> None:
        raise AssertionError("a command ran the usual way while the helper was up")

    # the runner's own view of proc only: git.command's lookup of the repository's config still runs
    monkeypatch.setattr(runner_module, "proc", types.SimpleNamespace(**{**vars(proc), "run": usual_way}))
    runner = Runner()
    try:
        runner.run(repo, "rev-parse", "HEAD")
        assert runner._child is not None
        first = runner._child.pid
        for args in (("log", "--oneline"), ("rev-parse", "--verify", "-q", "nosuchref")):
            runner.run(repo, *args, check=False)
        assert runner._child is not None and runner._child.pid == first
    finally:
        runner.close()


def test_without_a_helper_the_commands_run_the_usual_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An interpreter that cannot be started (an embedded patchctl): the same answers, git's own
    message on failure, and no helper tried again for every command."""
    repo = _repo(tmp_path)
    monkeypatch.setattr(runner_module.sys, "executable", str(tmp_path / "no-such-python"))
    runner = Runner()
    try:
        rc, out = runner.run(repo, "rev-parse", "HEAD~1")
        assert (rc, out.decode()) == (0, git.run(repo, "rev-parse", "HEAD~1").stdout)
        assert runner.run(repo, "rev-parse", "--verify", "-q", "nosuchref", check=False) == (1, b"")
        with pytest.raises(CommandFailed, match="Needed a single revision"):
            runner.run(repo, "rev-parse", "--verify", "nosuchref")
        assert runner._child is None
    finally:
        runner.close()


def test_a_failure_names_what_git_said(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    runner = Runner()
    try:
        with pytest.raises(CommandFailed, match="Needed a single revision"):
            runner.run(repo, "rev-parse", "--verify", "nosuchref")
    finally:
        runner.close()


def test_only_guarded_git_is_asked_of_the_helper(tmp_path: Path) -> None:
    runner = Runner()
    try:
        with pytest.raises(proc.UnguardedGit):
            runner._ask(["git", "-C", str(tmp_path), "status"])
        assert runner._child is None  # refused before any helper started
    finally:
        runner.close()


def test_close_waits_for_the_helper_to_end(tmp_path: Path) -> None:
    runner = Runner()
    runner.run(tmp_path, "--version")
    child = runner._child
    assert child is not None
    runner.close()
    assert child.returncode == 0  # it read the end of its input and ended; reaped


def test_close_kills_a_helper_that_does_not_end_and_its_git(tmp_path: Path) -> None:
    """A helper stopped (SIGSTOP) with a git running: close gives it 5 s, then kills its group."""
    fifo = _blocking_merge(tmp_path)
    runner = Runner()
    try:
        runner.run(tmp_path, "--version")
        child = runner._child
        assert child is not None
        threading.Thread(
            target=runner.run, args=(tmp_path, "merge-file", "-p", "mine", "old", "new"), daemon=True
        ).start()
        blocked = _child_of(child.pid)
        os.kill(child.pid, signal.SIGSTOP)
        # close waits for the lock the blocked command holds: it is taken over, not waited on
        runner._lock = threading.Lock()
        runner.close()
        assert child.returncode == -signal.SIGKILL
        assert _gone(blocked), f"the stopped helper's git {blocked} outlived close"
    finally:
        _release_readers(fifo)
