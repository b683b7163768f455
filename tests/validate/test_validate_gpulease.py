"""validate beside another live run on the stub GPUs (gpulease.py): the host's preflight fails its
``gpu_lease`` row before any Ray starts, and a node refuses to start on a GPU claimed since then.
The other run is a real process holding a real claim in the test's folder of claims."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from validate_helpers import STUB_PATH, Site, ours

from patchctl import gpulease
from patchctl.cli.main import cli

UUID = [f"GPU-5a1e0000-0000-0000-0000-00000000000{i}" for i in range(3)]
SRC = str(Path(gpulease.__file__).resolve().parents[1])
HOLDER = """
import sys
from patchctl.gpulease import Gpu, Owner, acquire
lease = acquire(Owner("other", "patchctl train", sys.argv[2], "box", (Gpu("0", sys.argv[1]),), False))
print("held", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """Another run's claim on stub GPU 0 in ``tmp_path/gpuleases`` (the site's folder of claims)."""
    p = subprocess.Popen(
        [sys.executable, "-c", HOLDER, UUID[0], str(tmp_path / "other-run")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC, gpulease.LEASES_ENV: str(tmp_path / "gpuleases")},
    )
    assert p.stdout is not None and p.stdout.readline().strip() == "held"
    yield tmp_path / "gpuleases", p
    p.kill()
    p.wait()


def test_validate_on_a_gpu_another_run_holds_fails_its_preflight_before_ray(
    site: Site, holder: tuple[Path, subprocess.Popen[str]]
) -> None:
    leases, other = holder
    assert leases == site.dir / "gpuleases"
    cluster = site.cluster(site.hosts({"node1": "0"}))
    site.migrate(cluster)
    done = CliRunner().invoke(cli, ["validate", "loop", "--config", str(site.dir / "patchctl.toml")])
    out = done.output
    assert done.exit_code == 1, out
    assert (
        f"node1: preflight check 'gpu_lease' failed: GPU 0 ({UUID[0]}) on {socket.gethostname()} is in use by "
        f"patchctl train pid {other.pid} (run folder {site.dir / 'other-run'}, since "
    ) in out
    assert (
        "it claimed this GPU for its run; wait for that run to end, or set hosts[i].env.CUDA_VISIBLE_DEVICES "
        "to GPUs nobody uses (free here: 1,2)"
    ) in out
    assert "teardown" not in out and ours() == [], "a Ray was started beside the other run"


def test_a_node_refuses_a_gpu_claimed_since_preflight(
    tmp_path: Path, holder: tuple[Path, subprocess.Popen[str]]
) -> None:
    """Two runs can both pass preflight; the node's own claim is what decides, before Ray starts."""
    leases, other = holder
    request = {"role": "head", "address": "127.0.0.1", "gpus": 1, "port": 1, "marker": "runb.0", "run_rel": "run"}
    done = subprocess.run(
        [sys.executable, "-m", "patchctl.validate.host", "node"],
        input=json.dumps(request) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": SRC,
            "PATH": STUB_PATH,
            "CUDA_VISIBLE_DEVICES": "0",
            gpulease.LEASES_ENV: str(leases),
        },
    )
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0 and [e["event"] for e in events] == ["refused"], done.stdout + done.stderr
    assert events[0]["lease"].startswith(f"GPU 0 ({UUID[0]}) on {socket.gethostname()} is in use by patchctl train ")
    assert f"pid {other.pid} (run folder {tmp_path / 'other-run'}" in events[0]["lease"]
    assert events[0]["fix"].startswith("wait for that run to end, or set hosts[i].env.CUDA_VISIBLE_DEVICES to ")
