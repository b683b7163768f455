"""One writer per tree: a command started while another patchctl writes the tree waits, then
refuses naming it, and never takes the live change for an interrupted one (issue 18.3).

``PATCHCTL_TEST_FAULT=stop@N`` freezes the writer (SIGSTOP) right before its Nth file-system
step, with its journal on disk, as a slow or busy apply would be at that moment.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.faults.helpers import GIT_IDENT, make_patchset, make_tree, patchctl, snapshot, without_record

#: the step a paused apply stops at: after its journal says "swapping" and a file was swapped
PAUSE_AT = 18
QUICK = {"PATCHCTL_LOCK_WAIT": "1"}


def _stopped(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


def _paused_apply(tree: Path, ps: Path) -> subprocess.Popen[str]:
    """An apply frozen half-way through its writes; the caller SIGCONTs it."""
    p = subprocess.Popen(
        [sys.executable, "-m", "patchctl", "apply", "-t", str(tree), "-p", str(ps)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **GIT_IDENT, "PATCHCTL_TEST_FAULT": f"stop@{PAUSE_AT}"},
    )
    deadline = time.monotonic() + 60
    while not _stopped(p.pid):
        assert p.poll() is None, p.communicate()
        assert time.monotonic() < deadline, "the apply never reached its pause"
        time.sleep(0.02)
    return p


@pytest.fixture()
def setup(tmp_path: Path) -> tuple[Path, Path, dict[str, object]]:
    tree = make_tree(tmp_path / "tree")
    ps = make_patchset(tmp_path / "ps", n_files=4)
    return tree, ps, snapshot(tree)


def test_verify_during_a_live_apply_waits_refuses_and_leaves_it_alone(setup: tuple[Path, Path, dict]) -> None:
    tree, ps, before = setup
    apply = _paused_apply(tree, ps)
    try:
        journal = tree / ".patchctl-journal" / "journal.json"
        assert json.loads(journal.read_text())["state"] == "swapping"  # the pause is mid-change
        half = snapshot(tree)
        t0 = time.monotonic()
        check = patchctl("verify", "-t", str(tree), "-p", str(ps), env=QUICK)
        waited = time.monotonic() - t0
        assert check.returncode == 2, check.stderr
        assert "rolled back" not in check.stderr
        assert (
            f"in use by another patchctl (pid {apply.pid}, `patchctl apply -t {tree} -p {ps}`, since " in check.stderr
        ), check.stderr
        assert waited >= 1.0  # it waited for the holder before refusing
        assert snapshot(tree) == half  # nothing of the live change was touched
        again = patchctl("apply", "-t", str(tree), "-p", str(ps), env=QUICK)
        assert again.returncode == 2 and f"pid {apply.pid}" in again.stderr and "pending" not in again.stderr
        assert snapshot(tree) == half
    finally:
        os.kill(apply.pid, signal.SIGCONT)
    _out, err = apply.communicate(timeout=60)
    assert apply.returncode == 0, err
    after = snapshot(tree)
    assert after != before and not (tree / ".patchctl-journal").exists()
    assert not (tree / ".patchctl-journal.lock").exists()  # the last holder removed its file
    done = patchctl("verify", "-t", str(tree), "-p", str(ps))
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_a_command_that_waits_gets_the_tree_once_the_writer_ends(setup: tuple[Path, Path, dict]) -> None:
    tree, ps, before = setup
    apply = _paused_apply(tree, ps)
    check = subprocess.Popen(
        [sys.executable, "-m", "patchctl", "revert", "-t", str(tree), "-p", str(ps)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **GIT_IDENT, "PATCHCTL_LOCK_WAIT": "60"},
    )
    time.sleep(1.5)
    assert check.poll() is None  # waiting, not acting
    os.kill(apply.pid, signal.SIGCONT)
    assert apply.wait(timeout=60) == 0
    _out, err = check.communicate(timeout=60)
    assert check.returncode == 0, err
    assert "rolled back" not in err
    assert without_record(snapshot(tree)) == without_record(before)  # the revert undid the whole apply


def test_a_killed_writer_lock_is_no_obstacle(setup: tuple[Path, Path, dict]) -> None:
    """The kernel drops a killed holder's lock: the next command recovers at once."""
    tree, ps, before = setup
    apply = _paused_apply(tree, ps)
    os.kill(apply.pid, signal.SIGKILL)
    apply.wait(timeout=30)
    assert (tree / ".patchctl-journal.lock").exists()
    t0 = time.monotonic()
    check = patchctl("verify", "-t", str(tree), "-p", str(ps), env={"PATCHCTL_LOCK_WAIT": "30"})
    assert time.monotonic() - t0 < 20
    assert "was rolled back" in check.stderr, check.stderr
    assert snapshot(tree) == before


def test_a_second_capture_never_mends_a_live_one(tmp_path: Path) -> None:
    """capture's recovery removes staging folders beside --out: never the staging of a live capture."""
    base = make_tree(tmp_path / "base", git=False)
    fork = tmp_path / "fork"
    shutil.copytree(base, fork)
    (fork / "scripts").mkdir()
    (fork / "scripts" / "probe.sh").write_text("#!/bin/sh\necho one  # Uky\n")
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "patchctl", "capture", "--from", str(fork), "--base", str(base), "--out", str(out)]
    first = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **GIT_IDENT, "PATCHCTL_TEST_FAULT": "stop@1"},
    )  # before its swap
    deadline = time.monotonic() + 60
    while not _stopped(first.pid):
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.02)
    try:
        staging = list(tmp_path.glob(".out.capture-*"))
        assert staging
        second = patchctl(*argv[3:], env=QUICK)
        assert second.returncode == 2 and f"--out {out}: in use by another patchctl (pid {first.pid}" in second.stderr
        assert "interrupted capture" not in second.stdout + second.stderr
        assert list(tmp_path.glob(".out.capture-*")) == staging  # left alone
    finally:
        os.kill(first.pid, signal.SIGCONT)
    _, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    assert (out / "patchset.toml").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base", "fork", "out"]  # no lock, no staging left
