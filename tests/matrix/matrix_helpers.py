"""Helpers for matrix tests: a real git repository built from verl release trees, one commit per state."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from patchctl import releases
from patchctl.cli.main import cli

IDENT = ["-c", "user.name=matrix-test", "-c", "user.email=matrix@test", "-c", "commit.gpgsign=false"]
SERVER = "verl/workers/rollout/vllm_rollout/vllm_async_server.py"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def listing(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under ``root`` (.git included) with size, mode and mtime: what "not written" compares."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(root))] = (st.st_size, st.st_mode, st.st_mtime_ns)
    return out


def commit_release(repo: Path, version: str, tag: str, scratch: Path) -> None:
    """Replace the repo's work tree with the pristine release ``version``, commit it, tag it."""
    for child in repo.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
    tree = releases.pristine(version, scratch / f"{tag}-src")
    shutil.copytree(tree, repo, symlinks=True, dirs_exist_ok=True)
    commit_all(repo, f"verl {version}", tag)


def commit_all(repo: Path, message: str, tag: str) -> None:
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), *IDENT, "commit", "-qm", message], check=True)
    subprocess.run(["git", "-C", str(repo), "tag", tag], check=True)


@pytest.fixture
def verl_repo(release_cache: Path, tmp_path: Path) -> Callable[[], Path]:
    """``verl_repo()``: an empty git repository (branch main) under tmp_path, for commit_release."""

    def make() -> Path:
        repo = tmp_path / "verl-checkout"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        return repo

    return make
