"""A tree's git facts (``Target.is_git``, ``Target.commit``): read from the tree when first asked
for, in one git process, the same answers as ``git rev-parse`` gives (issue 39: verify asks none)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from patchctl.target import Target


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "a tree"  # a space, as a user's folder may have
    (root / "sub").mkdir(parents=True)
    _git(root, "init", "-q", ".")
    return root


def test_a_work_tree_root_with_a_commit(repo: Path) -> None:
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
    target = Target.on_disk(repo, "0.6.1", "t")
    assert (target.commit, target.is_git) == (_git(repo, "rev-parse", "HEAD"), True)


def test_a_work_tree_root_before_its_first_commit(repo: Path) -> None:
    target = Target.on_disk(repo, None, "t")
    assert (target.is_git, target.commit) == (True, None)


def test_a_folder_inside_a_work_tree_is_not_its_root(repo: Path) -> None:
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
    target = Target.on_disk(repo / "sub", None, "t")
    assert (target.commit, target.is_git) == (None, False)


def test_a_folder_outside_git(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    target = Target.on_disk(tmp_path / "plain", None, "t")
    assert (target.is_git, target.commit) == (False, None)


def test_no_git_runs_until_a_fact_is_asked_for_then_one(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A git on PATH that logs each run: opening a tree runs none; asking both facts runs one."""
    log, bin_dir = tmp_path / "runs", tmp_path / "bin"
    bin_dir.mkdir()
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True).stdout.strip()
    (bin_dir / "git").write_text(f'#!/bin/sh\necho run >> "{log}"\nexec {real} "$@"\n')
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    target = Target.on_disk(repo, None, "t")
    assert not log.exists()
    assert target.is_git and target.commit is None
    assert log.read_text().split() == ["run"]
