"""kill -9 of `patchctl train`: the trainer dies with it, and what the trainer started (its own
session's group, as Ray's processes are) is ended by the next run (issue 18.4).

A real ``python -m patchctl train`` on the stand-in tree whose trainer starts a child and waits;
the child carries a marker in its argv so it is found in /proc.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchctl.cli.main import cli

TRAINER = """
import os, subprocess, sys, time
if os.environ.get("FAKE_MODE") == "spawn":
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", os.environ["MARK"]])  # as Ray is to verl
    print("started", flush=True)
    time.sleep(300)
"""


def _with_marker(mark: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and mark.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.append(int(entry))
        except OSError:
            continue
    return found


def _settle(check: object, want: bool, limit: float = 15.0) -> bool:
    deadline = time.monotonic() + limit
    while bool(check()) != want and time.monotonic() < deadline:
        time.sleep(0.1)
    return bool(check()) == want


def test_a_killed_train_leaves_its_trainer_group_to_the_next_run(tree: Path, tmp_path: Path) -> None:
    pytest.importorskip("tokenizers")
    pytest.importorskip("pyarrow")
    main_ppo = tree / "verl/trainer/main_ppo.py"
    main_ppo.write_text(TRAINER + main_ppo.read_text())
    mark = f"mark-{uuid.uuid4().hex}"
    child = subprocess.Popen(
        [sys.executable, "-m", "patchctl", "train", "--target", str(tree), "--out", str(tmp_path / "run1")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "FAKE_MODE": "spawn", "MARK": mark},
    )
    assert _settle(lambda: _with_marker(mark), True, 60), "the trainer never started its child"
    trainer = [p for p in _with_marker(mark) if b"main_ppo" in Path(f"/proc/{p}/cmdline").read_bytes()]
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert _settle(lambda: [p for p in trainer if Path(f"/proc/{p}").exists()], False)  # the trainer died with it
    assert _with_marker(mark)  # its child lives on, in the trainer's own group ...

    done = CliRunner().invoke(cli, ["train", "--target", str(tree), "--out", str(tmp_path / "run2"), "--json"])
    assert done.exit_code == 0, done.output
    assert _settle(lambda: _with_marker(mark), False)  # ... until the next run ends that group
