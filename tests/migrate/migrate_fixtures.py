"""Fixtures and helpers for migrate's tests (conftest.py re-exports the fixtures; the tests import
``Site`` from here, since a module named ``conftest`` would clash with tests/validate's when both
folders are collected in one run)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))

from migrate_helpers import make_gitignore_repo
from sshd_harness import LoopbackCluster, missing_tools

from patchctl.cli.main import cli
from patchctl.clusters import Cluster, load_cluster
from patchctl.migrate import state
from realparts import unavailable

VERL_VERSION = "0.6.1"


@pytest.fixture(scope="session")
def loopback(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackCluster]:
    """Three real sshd processes (node1..node3 on 127.0.0.2..4) plus an alias nobody answers."""
    why = missing_tools()
    if why:
        unavailable(f"migrate tests need a real sshd and rsync: {why}")
    cluster = LoopbackCluster(tmp_path_factory.mktemp("sshd"), 3)
    yield cluster
    cluster.close()


@dataclass
class Site:
    """One test's view of the loopback hosts: its own host roots and config file."""

    loop: LoopbackCluster
    dir: Path

    def config(self, extra: str = "", aliases: list[str] | None = None, name: str = "loop") -> Path:
        return self.loop.write_config(
            self.dir / "patchctl.toml", self.dir / "hosts", aliases=aliases, name=name, extra=extra
        )

    def cluster(self, extra: str = "", aliases: list[str] | None = None) -> Cluster:
        return load_cluster("loop", self.config(extra, aliases))

    def root(self, alias: str) -> Path:
        return self.dir / "hosts" / alias / "verl_Uky"


@pytest.fixture
def site(loopback: LoopbackCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Site]:
    monkeypatch.setattr(state, "state_dir", lambda: tmp_path / "migrate-state")  # not the shared cache
    yield Site(loopback, tmp_path)
    for h in loopback.hosts:  # a test that stopped a host must not take it from the next one
        if h.proc is None:
            h.start()


@pytest.fixture(scope="session")
def patched_verl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """verl 0.6.1 (a git tree from patchctl.releases) with the uky patchset applied by the CLI.

    The release is materialized once into $PATCHCTL_CACHE (set by tests/conftest.py) and
    copied, so the cache stays pristine. A failure to get it is an error of the tests that need
    it, as with ``release_tree``: never a skip, which would hide a broken download or cache.
    """
    from patchctl import releases

    pristine = releases.materialize(VERL_VERSION)
    tree = tmp_path_factory.mktemp("verl") / "verl_Uky"
    shutil.copytree(pristine, tree, symlinks=True)
    done = CliRunner().invoke(cli, ["apply", "--target", str(tree)])
    assert done.exit_code == 0, done.output
    return tree


@pytest.fixture
def verl_tree(patched_verl: Path, tmp_path: Path) -> Path:
    """A private copy of the patched tree, free to change."""
    tree = tmp_path / "src" / "verl_Uky"
    shutil.copytree(patched_verl, tree, symlinks=True)
    return tree


@pytest.fixture
def gitignore_repo(tmp_path: Path) -> Path:
    return make_gitignore_repo(tmp_path / "repo")
