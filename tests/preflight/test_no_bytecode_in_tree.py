"""Nothing patchctl starts on a tree writes ``__pycache__`` into it (issue 39, requirement 2):
``verify --env`` left ``verl/__pycache__`` behind, ``git status`` listed it and the next migrate
sent it to every host. Bytecode goes under the cache (``PYTHONPYCACHEPREFIX``) instead."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from patchctl import bytecode
from patchctl.train.launcher import build
from patchctl.train.profilemodel import Profile


def _caches(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("__pycache__"))


@pytest.mark.slow
def test_verify_env_leaves_no_bytecode_in_the_tree(release_tree: Callable[[str], Path], tmp_path: Path) -> None:
    tree = release_tree("0.6.1")
    assert _caches(tree) == []
    # as a user's shell has it: bytecode is written unless something says otherwise
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", bytecode.PREFIX)}
    env["PATCHCTL_CACHE"] = str(tmp_path / "cache")
    done = subprocess.run(
        [sys.executable, "-m", "patchctl", "verify", "--env", "--target", str(tree)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr  # the checks ran (this machine has no GPU)
    assert _caches(tree) == []
    assert list((tmp_path / "cache" / "pycache").rglob("*.pyc"))  # still cached, elsewhere
    if shutil.which("git"):
        status = subprocess.run(["git", "-C", str(tree), "status", "--porcelain"], capture_output=True, text=True)
        assert "__pycache__" not in status.stdout


def test_the_trainer_gets_a_bytecode_prefix_outside_the_tree(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home"), "PATCHCTL_CACHE": str(tmp_path / "cache")}
    profile = Profile("p", "a profile", "hf", "none", ("trainer.total_epochs=1",))
    launch = build(tmp_path / "tree", profile, {}, [], "python3", tmp_path / "log", environ=env)
    assert launch.env[bytecode.PREFIX] == str(tmp_path / "cache" / "pycache")


def test_a_users_own_choice_is_kept() -> None:
    assert bytecode.outside_tree({bytecode.PREFIX: "/mine"}) == {}
    assert bytecode.outside_tree({"PYTHONDONTWRITEBYTECODE": "1"}) == {}
    assert bytecode.outside_tree({"XDG_CACHE_HOME": "/x"}) == {bytecode.PREFIX: "/x/patchctl/pycache"}
