"""The pre-commit hook patchctl offers verl forks (``.pre-commit-hooks.yaml``, issue 25), for real.

pre-commit installs patchctl from this checkout into an environment of its own, as it would for a
fork naming this repository, and runs ``patchctl verify --strict`` in the fork's repository: a
tagged line no patch accounts for fails the commit, and the clean tree passes.

pre-commit is this environment's (the dev extra), else one installed once into
``$PATCHCTL_TEST_CACHE/pre-commit-venv``; its hook environments are kept in
``$PATCHCTL_TEST_CACHE/pre-commit-home``, so a later run reinstalls only patchctl, from pip's cache.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchctl.cli.main import cli
from realparts import unavailable

pytestmark = pytest.mark.slow

#: conftest's cache (imported by value: a test folder's own conftest may shadow the module name)
CACHE = Path(os.environ.get("PATCHCTL_TEST_CACHE", str(Path.home() / ".cache" / "patchctl-test")))
#: this checkout: the repository a fork's .pre-commit-config.yaml would name
REPO = Path(__file__).resolve().parents[1]
STRAY = "verl/trainer/main_ppo.py"


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def pre_commit() -> list[str]:
    """pre-commit's command: this environment's (the dev extra brings it), else the cached venv's,
    installed from the package index when missing."""
    if importlib.util.find_spec("pre_commit") is not None:
        return [sys.executable, "-m", "pre_commit"]
    venv = CACHE / "pre-commit-venv"
    exe = venv / "bin" / "pre-commit"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "pre-commit>=3.5"]
        done = subprocess.run(pip, capture_output=True, text=True)
        if done.returncode != 0:
            unavailable(f"pre-commit could not be installed: {done.stderr.strip()[-300:]}")
    return [str(exe)]


def try_hook(fork: Path) -> subprocess.CompletedProcess[str]:
    """``pre-commit try-repo THIS-CHECKOUT patchctl-verify --all-files`` in ``fork``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the hook's own patchctl, not src/
    env["PRE_COMMIT_HOME"] = str(CACHE / "pre-commit-home")
    argv = [*pre_commit(), "try-repo", str(REPO), "patchctl-verify", "--all-files"]
    return subprocess.run(argv, cwd=fork, env=env, capture_output=True, text=True, timeout=900)


def test_the_hook_fails_on_a_stray_tag_and_passes_on_the_clean_fork(
    release_tree: Callable[[str], Path],
) -> None:
    if not (REPO / ".git").exists():
        unavailable("the hook is installed from a git checkout of patchctl (pre-commit try-repo)")
    fork = release_tree("0.6.1")
    applied = CliRunner().invoke(cli, ["apply", "--target", str(fork)])
    assert applied.exit_code == 0, applied.output
    git(fork, "add", "-A")
    git(fork, "commit", "-qm", "the fork: verl 0.6.1 with the uky patchset")

    with (fork / STRAY).open("a", encoding="utf-8") as f:
        f.write("STRAY_KNOB = 1  # Uky\n")
    git(fork, "add", STRAY)
    stray = try_hook(fork)
    assert stray.returncode != 0, stray.stdout + stray.stderr
    assert "patchctl verify --strict" in stray.stdout and "Failed" in stray.stdout, stray.stdout
    assert STRAY in stray.stdout, stray.stdout

    git(fork, "checkout", "HEAD", "--", STRAY)
    clean = try_hook(fork)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "Passed" in clean.stdout, clean.stdout
