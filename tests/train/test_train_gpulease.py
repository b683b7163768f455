"""`patchctl train` refuses a GPU that another live run on the host holds (gpulease.py), with the
stub nvidia-smi's three GPUs: a real first ``python -m patchctl train`` whose trainer waits, then
the runs beside it. After kill -9 of the first run its GPU is free again."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchctl import gpulease
from patchctl.cli.main import cli

STUB_BIN = Path(__file__).parents[1] / "validate" / "stub_bin"
UUID0 = "GPU-5a1e0000-0000-0000-0000-000000000000"


def test_train_refuses_a_gpu_another_live_run_holds(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tokenizers")
    pytest.importorskip("pyarrow")
    leases = tmp_path / "leases"
    monkeypatch.setenv(gpulease.LEASES_ENV, str(leases))
    monkeypatch.setenv("PATH", f"{STUB_BIN}:{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    first = subprocess.Popen(
        [sys.executable, "-m", "patchctl", "train", "--target", str(tree), "--out", str(tmp_path / "run1")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "FAKE_MODE": "hang", "CUDA_VISIBLE_DEVICES": "0"},
    )
    try:
        deadline = time.monotonic() + 60
        while not list(leases.glob("*.lease")) and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list(leases.glob("*.lease")), "the first run never claimed its GPU"

        done = CliRunner().invoke(cli, ["train", "--target", str(tree), "--out", str(tmp_path / "run2")])
        assert done.exit_code == 2, done.output
        line = done.output.strip()
        assert "\n" not in line, line
        assert f"GPU 0 ({UUID0}) on {socket.gethostname()} is in use by patchctl train pid {first.pid} " in line
        assert f"(run folder {tmp_path / 'run1'}, since " in line
        assert line.endswith(
            "wait for that run to end, or set CUDA_VISIBLE_DEVICES to GPUs nobody uses (free here: 1,2)"
        )
        assert not (tmp_path / "run2" / "train.log").exists(), "the refused run started its trainer"

        beside = CliRunner().invoke(
            cli,
            ["train", "--target", str(tree), "--out", str(tmp_path / "run3"), "--json"],
            env={"CUDA_VISIBLE_DEVICES": "1,2"},
        )
        assert beside.exit_code == 0, beside.output
        assert len(list(leases.glob("*.lease"))) == 1, "the run on GPUs 1,2 kept its claim after it ended"

        first.send_signal(signal.SIGKILL)
        first.wait()
        again = CliRunner().invoke(cli, ["train", "--target", str(tree), "--out", str(tmp_path / "run4"), "--json"])
        assert again.exit_code == 0, again.output
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
