"""Progress on every wait (issue 19 req. 3): on a terminal's stderr, never into a pipe.

Each command runs for real with its stderr on a pty and its stdout in a pipe (as in
``patchctl ... | less``), then again with both in pipes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.cli.ptyrun import patchctl, run_on_pty
from tests.conftest import CACHE

WAIT = """
import time
from patchctl import progress
with progress.step("waiting for the thing", total=3) as s:
    time.sleep(0.8)
    s.advance("waiting for the rest")
    time.sleep(0.8)
print("after", flush=True)
"""
#: what the line may hold besides text: carriage return and erase-line; no colour, ever
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_a_wait_shows_a_line_on_a_terminal_and_erases_it() -> None:
    code, out, screen = run_on_pty([sys.executable, "-c", WAIT], {"NO_COLOR": "1"})
    assert (code, out) == (0, "after\n")
    assert "waiting for the thing 0/3" in screen and "waiting for the rest 1/3" in screen
    assert set(ESCAPES.findall(screen)) == {"\x1b[K"}  # erase-line only: NO_COLOR-safe
    assert screen.endswith("\r\x1b[K")  # the line is gone when the wait ends


def test_a_pipe_or_a_dumb_terminal_gets_nothing() -> None:
    done = subprocess.run([sys.executable, "-c", WAIT], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "after\n", "")
    code, _, screen = run_on_pty([sys.executable, "-c", WAIT], {"TERM": "dumb"})
    assert code == 0 and screen == ""


def test_a_quick_step_stays_silent() -> None:
    quick = "from patchctl import progress\nwith progress.step('quick'):\n    pass\n"
    assert run_on_pty([sys.executable, "-c", quick], {"PATCHCTL_PROGRESS_DELAY": "0.3"})[2] == ""


def _cache_with_the_sdist(tmp_path: Path) -> Path:
    """A cache holding only verl 0.6.1's sdist: the tree must be unpacked (a download's wait, minus the network)."""
    cache = tmp_path / "cache"
    (cache / "releases").mkdir(parents=True)
    shutil.copy(CACHE / "releases" / "verl-0.6.1.tar.gz", cache / "releases")
    return cache


def test_unpacking_a_release_and_the_matrix_show_progress(tmp_path: Path) -> None:
    env = {"PATCHCTL_CACHE": str(_cache_with_the_sdist(tmp_path))}
    code, out, screen = run_on_pty(patchctl("verify", "--target", "verl==0.6.1"), env)
    assert code == 1 and "verify: FAILED" in out  # an unpatched release
    assert "unpacking verl-0.6.1.tar.gz" in screen

    code, out, screen = run_on_pty(patchctl("matrix", "--versions", "0.6.1", "--jobs", "1"), env)
    assert code == 0, out + screen
    assert "matrix: applying to each version 0/1" in screen
    piped = subprocess.run(
        patchctl("matrix", "--versions", "0.6.1", "--jobs", "1"),
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )
    assert piped.returncode == 0 and "matrix: applying" not in piped.stderr and "\r" not in piped.stderr


def test_capture_shows_its_proof(tmp_path: Path) -> None:
    fork = tmp_path / "fork"
    shutil.copytree(CACHE / "trees" / "verl-0.6.1", fork, symlinks=True)
    env = {"PATCHCTL_CACHE": str(_cache_with_the_sdist(tmp_path))}
    applied = subprocess.run(
        patchctl("apply", "--target", str(fork)), capture_output=True, text=True, env={**os.environ, **env}
    )
    assert applied.returncode == 0, applied.stdout + applied.stderr  # the uky patches: a proof of 15 patches
    code, out, screen = run_on_pty(patchctl("capture", "--from", str(fork), "--base", "verl==0.6.1", "--dry-run"), env)
    assert code == 0, out + screen
    # the line covers the whole capture: comparing (seconds) then the proof (a fraction of one here);
    # a long tmp path is cut at the terminal's width, so only the start of the line is certain
    assert re.search(r"capture: (comparing /\S+/fork with|proving 12 patch\(es\) on verl 0\.6\.1)", screen)
    piped = subprocess.run(
        patchctl("capture", "--from", str(fork), "--base", "verl==0.6.1", "--dry-run"),
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )
    assert piped.returncode == 0 and "capture: " not in piped.stderr


def test_verify_env_says_what_it_waits_for(tmp_path: Path) -> None:
    """``verify --env`` waited 15-18 s on its probes (torch, vLLM, Ray imports) with a blank screen."""
    tree = tmp_path / "tree"
    shutil.copytree(CACHE / "trees" / "verl-0.6.1", tree, symlinks=True)
    code, out, screen = run_on_pty(patchctl("verify", "--env", "--target", str(tree)), {})
    assert code in (0, 1), out + screen  # judged (this machine has no GPU)
    assert re.search(r"verify --env: (checking|waiting for \w+|judging)", screen)
    assert re.search(r" \d+/\d+ ", screen)  # a counter of checks done
    piped = subprocess.run(
        patchctl("verify", "--env", "--target", str(tree)), capture_output=True, text=True, timeout=300
    )
    assert "verify --env: " not in piped.stderr
