"""What a kill -9 of patchctl leaves is swept by the next run, and only that (issue 18.4, 24.5).

Real processes: a python child that makes an owned folder (or starts a child in a session of
its own, as the trainer and a Ray head are started) is SIGKILLed; the next owned folder of that
kind sweeps. Folders of a live owner, of another user, or without an owner file stay.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from patchctl import orphans

SRC = str(Path(orphans.__file__).parents[1])


def _killed_owner(code: str) -> str:
    """Run ``code`` in a child python, read one line it prints, SIGKILL it; return the line."""
    child = subprocess.Popen(
        [sys.executable, "-c", code + "\nimport sys, time\nsys.stdout.flush()\ntime.sleep(60)"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    return line


def _gone(pid: int, limit: float = 10.0) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_the_next_run_sweeps_a_killed_runs_folder_only(tmp_path: Path) -> None:
    mine = orphans.owned_dir("pcv-stage-")  # live owner: this test
    ownerless = orphans.BASE / f"pcv-stage-test-{os.getpid()}"
    ownerless.mkdir()
    dead = Path(_killed_owner("from patchctl import orphans; print(orphans.owned_dir('pcv-stage-'))"))
    assert dead.is_dir() and (dead / orphans.OWNER).is_file()
    try:
        assert orphans.sweep("pcv-stage-") == [dead] and not dead.exists()
        assert mine.is_dir() and ownerless.is_dir()
    finally:
        shutil.rmtree(mine)
        ownerless.rmdir()


@pytest.mark.skipif(os.getuid() != 0, reason="making a folder another user owns needs root")
def test_another_users_folder_stays(tmp_path: Path) -> None:
    foreign = Path(_killed_owner("from patchctl import orphans; print(orphans.owned_dir('pcv-stage-'))"))
    os.chown(foreign, 65534, 65534)  # its owner is gone, but it is not this user's
    try:
        assert foreign not in orphans.sweep("pcv-stage-") and foreign.is_dir()
    finally:
        shutil.rmtree(foreign)


def test_a_reused_pid_is_not_taken_for_the_owner(tmp_path: Path) -> None:
    folder = orphans.owned_dir("pcm-")
    (folder / orphans.OWNER).write_text(f"{os.getpid()} 1\n")  # this pid, but another start time
    assert folder in orphans.sweep("pcm-") and not folder.exists()


def test_a_group_started_in_its_own_session_is_ended_by_the_next_run() -> None:
    """A trainer's process group (the driver and what it started) outlives a kill -9 of patchctl
    only until the next run: the group is written down and swept."""
    line = _killed_owner(
        "import subprocess, sys\n"
        "from patchctl import proc\n"
        "c = proc.spawn(['sh', '-c', 'sleep 60 & echo $!; wait'], stdout=subprocess.PIPE, new_session=True)\n"
        "print(c.pid, c.stdout.readline().decode().strip())"
    )
    leader, member = (int(x) for x in line.split())
    assert _gone(leader)  # the leader dies with its parent (PR_SET_PDEATHSIG)
    os.kill(member, 0)  # ... but its group's other members do not
    orphans.owned_dir("pcm-")  # the next run that makes any owned folder
    assert _gone(member)


def test_a_killed_matrix_leaves_no_scratch_after_the_next(tmp_path: Path) -> None:
    dead = Path(
        _killed_owner(
            "from patchctl import orphans\n"
            "cm = orphans.scratch('patchctl-matrix-'); p = cm.__enter__(); (p / '0').mkdir(); print(p)"
        )
    )
    assert dead.is_dir()
    with orphans.scratch("patchctl-matrix-") as live:
        assert live.is_dir() and not dead.exists()
    assert not live.exists()
