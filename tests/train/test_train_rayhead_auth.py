"""The Ray head `patchctl train` starts and the trainer agree on the run's own token (real Ray).

Ray >= 2.52 turns token authentication on for a cluster that ``ray start`` makes. On the GPU
machine (Ray 2.60) verl's driver, started beside the head, connected without the token the head
had just written to ~/.ray/auth_token and was refused ("InvalidAuthToken"): the run died before
its TaskRunner. The head now gets a token file in the run folder; the trainer's environment names
it. The control: a driver without that environment is refused by the same head.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from patchctl.train import rayhead

ray = pytest.importorskip("ray")

DRIVER = """
import ray
ray.init()
print("sum", ray.get(ray.remote(lambda: 41 + 1).remote()))
"""


def _driver(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", DRIVER], env=env, cwd=cwd, capture_output=True, text=True, check=False, timeout=120
    )


@pytest.mark.skipif(
    tuple(int(x) for x in ray.__version__.split(".")[:2]) < (2, 52), reason="Ray below 2.52 has no token authentication"
)
def test_trainer_with_the_runs_token_connects_and_a_stranger_is_refused(tmp_path):
    spec = rayhead.spec(sys.executable, 1, tmp_path / "run" / "ray-head.log")
    home = tmp_path / "home"
    home.mkdir()
    # Ray's socket paths must stay under 108 bytes: pytest's tmp_path is too deep for its temp dir
    short = Path(tempfile.mkdtemp(prefix="pcrh", dir="/tmp"))
    base = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RAY_")},
        "HOME": str(home),
        "RAY_TMPDIR": str(short),
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    env = {**base, **rayhead.auth_env(spec)}
    head = rayhead.Head(spec, env, tmp_path)
    try:
        assert stat.S_IMODE(spec.token.stat().st_mode) == 0o600
        ok = _driver({**env, "RAY_ADDRESS": spec.address}, tmp_path)
        assert "sum 42" in ok.stdout, ok.stderr[-2000:]
        # a token that is not this run's: the head must refuse (Ray < 2.52 would let it in)
        stranger = _driver(
            {**base, "RAY_ADDRESS": spec.address, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "0" * 64}, tmp_path
        )
        assert "sum 42" not in stranger.stdout
        assert "Unauthenticated" in stranger.stderr or "InvalidAuthToken" in stranger.stderr, stranger.stderr[-2000:]
    finally:
        head.stop()
        shutil.rmtree(short, ignore_errors=True)
    assert spec.token.read_text() not in " ".join(spec.argv)
