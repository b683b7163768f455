"""The Ray head that `patchctl train` starts beside the trainer leaves Ray's address file as it found it.

On the GPU machine a killed `ray start --head` left /tmp/ray/ray_current_cluster behind, naming a
dead head; the next bare ray.init(num_cpus=...) there (verl's own, `verify --env`'s Ray check)
failed with "When connecting to an existing cluster, num_cpus and num_gpus must not be provided".
A stand-in head writes the file the way `ray start` does, then blocks like `--block`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from patchctl.train import rayhead

FAKE_HEAD = """
import os, sys, time
path = os.path.join(os.environ["RAY_TMPDIR"], "ray", "ray_current_cluster")
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, "w") as f:
    f.write(sys.argv[1])
open(path + ".ready", "w").close()
time.sleep(60)
"""


def start(tmp_path: Path, address: str = "127.0.0.1:43117") -> tuple[rayhead.Head, Path]:
    spec = rayhead.HeadSpec(
        (sys.executable, "-c", FAKE_HEAD, address), address, tmp_path / "ray-head.log", tmp_path / "ray-auth-token"
    )
    head = rayhead.Head(spec, {"RAY_TMPDIR": str(tmp_path / "raytmp")}, tmp_path)
    path = tmp_path / "raytmp" / "ray" / "ray_current_cluster"
    deadline = time.monotonic() + 20
    while not Path(str(path) + ".ready").exists():
        assert time.monotonic() < deadline, "the stand-in head did not start"
        time.sleep(0.02)
    return head, path


def test_address_file_follows_rays_rules():
    assert rayhead.address_file({"RAY_TMPDIR": "/x", "TMPDIR": "/y"}) == Path("/x/ray/ray_current_cluster")
    if sys.platform.startswith("linux"):
        assert rayhead.address_file({"TMPDIR": "/y"}) == Path("/y/ray/ray_current_cluster")
    assert rayhead.address_file({}) == Path("/tmp/ray/ray_current_cluster")


def test_stop_removes_the_address_it_wrote(tmp_path):
    head, path = start(tmp_path)
    assert path.read_text() == "127.0.0.1:43117"
    head.stop()
    assert not path.exists()
    head.stop()  # idempotent


def test_stop_puts_back_the_address_that_was_there(tmp_path):
    path = tmp_path / "raytmp" / "ray" / "ray_current_cluster"
    path.parent.mkdir(parents=True)
    path.write_text("10.0.0.5:6379")
    head, _ = start(tmp_path)
    assert path.read_text() == "127.0.0.1:43117"
    head.stop()
    assert path.read_text() == "10.0.0.5:6379"


def test_stop_leaves_an_address_another_cluster_wrote_since(tmp_path):
    head, path = start(tmp_path)
    later = "10.0.0.9:6380"
    path.write_text(later)  # a `ray start` of someone else's while the run went on
    head.stop()
    assert path.read_text() == later
