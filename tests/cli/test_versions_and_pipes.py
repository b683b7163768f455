"""How a newcomer names a release and reads output through a pipe (issue 39, requirement 8):
``--target 0.6.1`` and ``v0.6.1`` are the release, near misses and mistyped commands get "did you
mean", a reader that leaves early (``| head``) is not an error, and a pager on ``2>&1`` still gets
the terminal's width."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.clirun import run

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("spelling", ["0.6.1", "v0.6.1"])
def test_a_bare_version_names_the_release(spelling: str, release_cache: Path) -> None:
    code, out = run("verify", "--target", spelling)
    assert code in (0, 1), out  # verified (the tree may or may not carry the patches): it ran
    assert "verl-0.6.1 (verl 0.6.1)" in out.splitlines()[0]


def test_a_folder_named_like_a_version_is_still_that_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "0.6.1").mkdir()
    monkeypatch.chdir(tmp_path)
    code, out = run("verify", "--target", "0.6.1")
    assert code == 2
    assert "not a verl tree" in out and "0.6.1" in out


@pytest.mark.parametrize("typed", ["verl=0.6.1", "verl-0.6.1", "verl 0.6.1"])
def test_a_near_miss_of_a_release_spec_says_what_was_meant(typed: str) -> None:
    code, out = run("verify", "--target", typed)
    assert code == 2
    assert "did you mean 'verl==0.6.1'?" in out


def test_a_mistyped_command_gets_did_you_mean() -> None:
    code, out = run("aply", "--target", "x")
    assert code == 2
    assert "No such command 'aply'. (did you mean 'apply'?)" in out


def _patchctl(*args: str) -> list[str]:
    return [sys.executable, "-m", "patchctl", *args]


def test_a_reader_that_leaves_early_is_not_an_error(release_tree: Callable[[str], Path]) -> None:
    """``patchctl apply --dry-run | head -c 10``: Python exited 120 flushing into the closed pipe."""
    tree = release_tree("0.6.1")
    # buffered stdout, as a user's shell has it: PYTHONUNBUFFERED hid the exit 120
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    child = subprocess.Popen(
        _patchctl("apply", "--target", str(tree), "--dry-run"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert child.stdout is not None and child.stderr is not None
    assert child.stdout.read(10)
    child.stdout.close()
    code = child.wait(timeout=120)
    err = child.stderr.read().decode()
    assert code == 0, err
    assert "Exception ignored" not in err and "BrokenPipe" not in err


def test_a_pager_on_both_streams_still_gets_the_terminal_width(release_tree: Callable[[str], Path]) -> None:
    """``patchctl verify 2>&1 | less``: stdout and stderr are the pipe, stdin is the terminal."""
    tree = release_tree("0.6.1")
    leader, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 90, 0, 0))
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    try:
        done = subprocess.run(
            _patchctl("verify", "--target", str(tree)),
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=120,
            check=False,
        )
    finally:
        os.close(terminal)
        os.close(leader)
    table = [line for line in done.stdout.decode().splitlines() if line[:1] in "┏┃┡│└"]
    assert table, done.stdout.decode()[:500]  # a table was drawn (the first line names the tree's long path)
    assert max(len(line) for line in table) <= 90
