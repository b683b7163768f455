"""kill -9 (and Ctrl-C, SIGTERM) at every file-system step of apply and revert, in real processes.

``PATCHCTL_TEST_FAULT=kill@N`` makes patchctl SIGKILL itself right before its Nth mutation. After
each kill the next command (verify) must say it finished or rolled back the change, and the tree
must be byte-identical to its state before or after: never in between, no temp file, no folder
the change created left empty.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.faults.helpers import make_patchset, make_tree, patchctl, snapshot, without_record


def _expected_recovery(tree: Path) -> tuple[str, str | None]:
    """What the next command must say, and the side the tree must end on ("before", "after",
    or None where only the journal's empty folder was left, which happens on both sides), read
    from what the killed one left on disk. A roll-back's sentence carries its count: every
    file whose backup the journal holds goes back, and every file the change created (once
    staging was over) goes."""
    folder = tree / ".patchctl-journal"
    if not folder.exists():
        return "", None
    if not (folder / "journal.json").exists():
        return "removed the empty journal", None
    doc = json.loads((folder / "journal.json").read_text())
    if doc["state"] == "done":
        return "finished its clean-up", "after"
    ops = doc["ops"]
    restored = sum(1 for op in ops if op["existed"] and os.path.lexists(folder / op["backup"]))
    if doc["state"] != "staging":
        restored += sum(1 for op in ops if not op["existed"] and os.path.lexists(tree / op["path"]))
    return f"was rolled back; {restored} file(s) restored", "before"


def _sweep(tmp_path: Path, command: str, *, git: bool) -> list[str]:
    """Kill ``command`` before each of its steps in turn; return the side each cut left the tree
    on. The sides must be a run of "before" then a run of "after": the commit point is one step."""
    tree = make_tree(tmp_path / "tree", git=git)
    ps = make_patchset(tmp_path / "ps", n_files=4)
    before = snapshot(tree)
    assert patchctl("apply", "-t", str(tree), "-p", str(ps)).returncode == 0
    after = snapshot(tree)
    if command == "apply":
        assert patchctl("revert", "-t", str(tree), "-p", str(ps)).returncode == 0
        start, end = before, after
    else:
        start, end = after, before
    assert snapshot(tree) == start
    outcomes: list[str] = []
    for n in range(1, 200):
        done = patchctl(command, "-t", str(tree), "-p", str(ps), env={"PATCHCTL_TEST_FAULT": f"kill@{n}"})
        if done.returncode == 0:
            break  # the command had fewer steps than n: every step has been cut once
        assert done.returncode == -signal.SIGKILL, done.stderr
        said, side = _expected_recovery(tree)
        check = patchctl("verify", "-t", str(tree), "-p", str(ps))
        assert said in check.stderr if said else check.stderr == "", (n, said, check.stderr)
        state = without_record(snapshot(tree))
        if state == without_record(start):
            outcomes.append("before")
        else:
            assert state == without_record(end), f"kill at step {n} left the tree in between"
            outcomes.append("after")
        assert side in (None, outcomes[-1]), f"kill at step {n}: the recovery said {said!r}, the tree is {outcomes[-1]}"
        assert ".patchctl-tmp" not in check.stdout
        # back to the start for the next cut
        undo = "revert" if command == "apply" else "apply"
        if outcomes[-1] == "after":
            assert patchctl(undo, "-t", str(tree), "-p", str(ps)).returncode == 0
        assert without_record(snapshot(tree)) == without_record(start)
    else:
        pytest.fail("the command never finished without a fault")
    flips = outcomes.index("after") if "after" in outcomes else len(outcomes)
    assert outcomes == ["before"] * flips + ["after"] * (len(outcomes) - flips), outcomes
    return outcomes


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
def test_kill_at_every_step_of_apply(tmp_path: Path, git: bool) -> None:
    outcomes = _sweep(tmp_path, "apply", git=git)
    # both sides of the commit point were hit: the sweep really covered the whole write
    assert outcomes.count("before") >= 10 and "after" in outcomes


def test_kill_at_every_step_of_revert(tmp_path: Path) -> None:
    outcomes = _sweep(tmp_path, "revert", git=True)
    assert outcomes.count("before") >= 10 and "after" in outcomes


@pytest.mark.parametrize("sig", ["int", "term"])
def test_a_signal_mid_swap_rolls_back_in_process(tmp_path: Path, sig: str) -> None:
    """Ctrl-C or SIGTERM while files are being swapped: the same process puts every one back,
    the one being swapped at that moment too, and exits 130 leaving no journal."""
    tree = make_tree(tmp_path / "tree")
    ps = make_patchset(tmp_path / "ps", n_files=4)
    before = snapshot(tree)
    assert patchctl("apply", "-t", str(tree), "-p", str(ps)).returncode == 0
    after = without_record(snapshot(tree))
    assert patchctl("revert", "-t", str(tree), "-p", str(ps)).returncode == 0
    seen_exit, sides = set(), []
    for n in range(1, 80):
        done = patchctl("apply", "-t", str(tree), "-p", str(ps), env={"PATCHCTL_TEST_FAULT": f"{sig}@{n}"})
        if done.returncode == 0:
            break
        seen_exit.add(done.returncode)
        assert not (tree / ".patchctl-journal").exists(), "the process left its journal for someone else"
        state = snapshot(tree)
        if state == before:
            sides.append("before")
            continue
        # a signal past the commit point waits for the clean-up: the change is whole, not half
        assert without_record(state) == after, f"{sig} at step {n} left the tree in between"
        sides.append("after")
        assert patchctl("revert", "-t", str(tree), "-p", str(ps)).returncode == 0
    assert seen_exit == {130}
    assert sides.count("before") >= 10


def test_random_kills_on_a_large_patchset(tmp_path: Path) -> None:
    """300 new files plus an edit: SIGKILL at random moments, from outside, like a user would."""
    tree = make_tree(tmp_path / "tree")
    ps = make_patchset(tmp_path / "ps", n_files=300)
    before = snapshot(tree)
    t0 = time.monotonic()
    assert patchctl("apply", "-t", str(tree), "-p", str(ps)).returncode == 0
    took = time.monotonic() - t0
    after = without_record(snapshot(tree))
    assert patchctl("revert", "-t", str(tree), "-p", str(ps)).returncode == 0
    rng = random.Random(1234)
    seen = set()
    for _ in range(8):
        proc = subprocess.Popen(
            [sys.executable, "-m", "patchctl", "apply", "-t", str(tree), "-p", str(ps)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.3, 1.0) * took)
        proc.kill()
        proc.wait()
        patchctl("verify", "-t", str(tree), "-p", str(ps))
        state = without_record(snapshot(tree))
        assert state in (without_record(before), after), "a kill left the tree between before and after"
        seen.add("after" if state == after else "before")
        if state == after:
            assert patchctl("revert", "-t", str(tree), "-p", str(ps)).returncode == 0
        assert snapshot(tree) == before
    # a later apply + revert leaves nothing behind (the original report: 227 stray files)
    assert patchctl("apply", "-t", str(tree), "-p", str(ps)).returncode == 0
    assert patchctl("revert", "-t", str(tree), "-p", str(ps)).returncode == 0
    assert snapshot(tree) == before
