"""capture's --out swap killed at each of its steps, and what verify says of stray temp files."""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

import pytest
from tests.faults.helpers import make_tree, patchctl, snapshot


def _fork(tmp: Path, base: Path, script: str) -> Path:
    fork = tmp / "fork"
    if fork.exists():
        shutil.rmtree(fork)
    shutil.copytree(base, fork)
    (fork / "scripts").mkdir(exist_ok=True)
    (fork / "scripts" / "probe.sh").write_text(f"#!/bin/sh\necho {script}  # Uky\n")
    return fork


@pytest.mark.parametrize("step", [1, 2, 3])
def test_capture_killed_mid_publish_leaves_the_old_or_the_new_patchset(tmp_path: Path, step: int) -> None:
    base = make_tree(tmp_path / "base", git=False)
    out = tmp_path / "out"
    assert (
        patchctl(
            "capture", "--from", str(_fork(tmp_path, base, "one")), "--base", str(base), "--out", str(out)
        ).returncode
        == 0
    )
    old = snapshot(out)
    fork = _fork(tmp_path, base, "two")
    done = patchctl(
        "capture",
        "--from",
        str(fork),
        "--base",
        str(base),
        "--out",
        str(out),
        env={"PATCHCTL_TEST_FAULT": f"kill@{step}"},
    )
    assert done.returncode == -signal.SIGKILL
    # the next capture mends what the killed one left, says so, and then does its own work
    again = patchctl("capture", "--from", str(fork), "--base", str(base), "--out", str(out))
    assert "interrupted capture" in again.stdout + again.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base", "fork", "out"]
    assert again.returncode == 0
    assert (out / "files" / "scripts" / "probe.sh").read_text() == "#!/bin/sh\necho two  # Uky\n"
    assert snapshot(out) != old


def test_verify_names_a_stray_temp_file(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree", git=False)
    (tree / "verl" / ".x.py.0badc0de.patchctl-tmp").write_text("half\n")
    done = patchctl("verify", "-t", str(tree))
    assert done.returncode == 1
    assert (
        "  leftover temp file  verl/.x.py.0badc0de.patchctl-tmp: a write was cut off here; delete it "
        "(rm 'verl/.x.py.0badc0de.patchctl-tmp')"
    ) in done.stdout
    assert done.stdout.rstrip().endswith("verify: FAILED")
