"""Fixtures of the Slurm tests: a real Slurm (slurm_harness.py) and a loopback sshd as its login node.

``slurm`` starts once per session (seconds: munged, slurmctld, two slurmd, one sshd) and leaves
nothing running. ``slurm_site`` gives each test its own folder, the stand-in verl tree of the
validate tests as a git repository, and a config writer for a ``scheduler = "slurm"`` cluster
whose login node is the sshd and whose root is on the local file system (shared by both nodes,
as an NFS mount would be) or, for the non-shared variant, a per-node path (``%n``).
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "migrate"))

from migrate_helpers import git  # noqa: E402 - importable once sys.path has the folder above
from slurm_harness import SlurmCluster, missing_tools  # noqa: E402 - as above
from sshd_harness import LoopbackCluster, SshHost  # noqa: E402 - as above
from sshd_harness import missing_tools as sshd_missing  # noqa: E402 - as above

from patchctl.migrate import state  # noqa: E402 - as above
from patchctl.validate.host.procs import MARKER  # noqa: E402 - as above
from realparts import unavailable  # noqa: E402 - as above

STANDIN = HERE.parent / "validate" / "standin"


class LoginNode(LoopbackCluster):
    """The loopback sshd as a login node whose sessions start in their own home (HOME), as a real
    login node's start in the account's home there: not in this machine's account home (/root),
    which would collect the runs' folders, and whose interpreters the compute nodes need, so it
    cannot be hidden from them (test_slurm_own_home.py mounts another folder over the login home)."""

    def _sshd_config(self, h: SshHost) -> None:
        super()._sshd_config(h)
        with h.config.open("a") as f:
            f.write('ForceCommand cd "$HOME" && eval "$SSH_ORIGINAL_COMMAND"\n')


@dataclass
class Slurm:
    cluster: SlurmCluster
    #: the login node: one sshd whose sessions have this cluster's SLURM_CONF
    login: LoginNode


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Slurm]:
    why = missing_tools() or sshd_missing()
    if why:
        unavailable(f"the Slurm tests need a real Slurm and sshd: {why}")
    base = tmp_path_factory.mktemp("slurm")
    cluster = SlurmCluster(base / "slurm")
    try:
        login = LoginNode(base / "sshd", 1, env={"SLURM_CONF": str(cluster.conf)})
    except BaseException:
        cluster.close()
        raise
    try:
        yield Slurm(cluster, login)
    finally:
        login.close()
        cluster.close()


@dataclass
class SlurmSite:
    slurm: Slurm
    dir: Path
    tree: Path

    #: the head's GCS port: a free one, as another Ray on this machine may hold 6379
    ray_port: int = 0

    def __post_init__(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.ray_port = int(s.getsockname()[1])

    @property
    def shared(self) -> Path:
        return self.dir / "shared" / "verl_Uky"

    def node_root(self, node: str) -> Path:
        return self.dir / "local" / node / "verl_Uky"

    def config(self, extra: str = "", *, shared: bool = True, name: str = "hpc", nodes: int = 2) -> Path:
        root = self.shared if shared else self.dir / "local" / "%n" / "verl_Uky"
        path = self.dir / "patchctl.toml"
        path.write_text(
            f'[clusters.{name}]\nscheduler = "slurm"\nlogin = "node1"\n'
            f'ssh_config = "{self.slurm.login.ssh_config}"\nroot = "{root}"\n'
            f"shared_root = {'true' if shared else 'false'}\n"
            f'partition = "debug"\nnodes = {nodes}\ncpus_per_task = 1\ntime = "00:05:00"\n'
            f'python = "{sys.executable}"\ntimeout = 20\nray_port = {self.ray_port}\n{extra}'
        )
        return path


def stand_in_site(slurm: Slurm, top: Path, mp: pytest.MonkeyPatch) -> SlurmSite:
    """A site in ``top``: the stand-in verl as a git checkout, migrate's state and the working
    folder there, and ``SLURM_CONF`` set for the tests' own squeue/scancel (through ``mp``, a
    test's monkeypatch or a longer-lived ``MonkeyPatch.context()``)."""
    mp.setattr(state, "state_dir", lambda: top / "migrate-state")
    mp.chdir(top)
    mp.setenv("SLURM_CONF", str(slurm.cluster.conf))
    tree = top / "src" / "verl_Uky"
    shutil.copytree(STANDIN, tree, ignore=shutil.ignore_patterns("__pycache__"))
    git(tree, "init", "-q", "-b", "main")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "stand-in verl")
    os.chmod(top, 0o755)
    return SlurmSite(slurm, top, tree)


@pytest.fixture
def slurm_site(slurm: Slurm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SlurmSite]:
    yield stand_in_site(slurm, tmp_path, monkeypatch)
    slurm.cluster.reset()
    deadline = time.monotonic() + 30  # a killed node's steps end once its slurmd is back (Slurm's own cleanup)
    while ours(slurm) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ours(slurm) == [], "a Ray or trainer process of a validate job was left running"


def ours(slurm: Slurm) -> list[int]:
    """Live processes (not zombies) carrying a validate run's marker that this session's jobs
    started: sbatch passes the login session's HOME, which is under this session's sshd base."""
    home = f"HOME={slurm.login.base}/".encode()
    out = []
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
            state_ = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if f"{MARKER}=".encode() in env and state_ != b"Z" and home in env:
            out.append(pid)
    return out
