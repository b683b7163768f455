"""Host sides that outlived a Ctrl-C: each must end with the patchctl that started it.

CI caught two after a Ctrl-C during ray-up (tests/cli/test_demo.py): a worker's supervisor still
starting when teardown looked, which then started Ray, and the head's ``form`` blocked in
``ray.init`` against a GCS being stopped. Real processes and pipes; no Ray cluster is needed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from patchctl.validate.host import node, procs, statedir

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
