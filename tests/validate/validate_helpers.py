"""Fixtures and helpers for validate's tests (conftest.py re-exports the fixtures; the tests import
the rest from here, since a module named ``conftest`` would clash with tests/migrate's).

The loopback sshd hosts of tests/migrate (ssh at 127.0.0.2-4), a stand-in verl tree sent there by
the real migrate, and a cluster config whose hosts are separate Ray nodes, each at an address of
its own on a loopback net chosen per test session.

The hosts run this interpreter (the cluster's ``python``), so Ray, numpy and pandas are there as
verl's own dependencies would be on a real host; nvidia-smi is a stub reporting three GPUs.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "migrate"))

from migrate_helpers import git  # noqa: E402 - importable once sys.path has the folder above
from sshd_harness import LoopbackCluster, missing_tools  # noqa: E402 - importable once sys.path has the folder above

from patchctl.cli.main import cli  # noqa: E402 - importable once sys.path has the folder above
from patchctl.clusters import Cluster, load_cluster  # noqa: E402 - importable once sys.path has the folder above
from patchctl.migrate import Options as MigrateOptions  # noqa: E402 - importable once sys.path has the folder above
from patchctl.migrate import migrate, state  # noqa: E402 - as above
from patchctl.validate import plan as planning  # noqa: E402 - as above
from patchctl.validate.host import statedir  # noqa: E402 - importable once sys.path has the folder above
from patchctl.validate.host.procs import MARKER  # noqa: E402 - importable once sys.path has the folder above
from realparts import unavailable  # noqa: E402 - importable once sys.path has the folder above

#: verify --env checks a CPU test host cannot pass (no torch, no vLLM, no apply record)
SKIP = '["torch", "vllm", "patches"]'
STUB_PATH = f"{HERE / 'stub_bin'}:/usr/local/bin:/usr/bin:/bin"
#: Ray's node IPs: loopback addresses of this test session's own (sshd listens on 127.0.0.2-4),
#: so a second run of this suite on the machine never finds our nodes as "a Ray already running"
_NET = f"127.{secrets.randbelow(200) + 20}.{secrets.randbelow(250) + 1}"
ADDRESS = {"node1": f"{_NET}.2", "node2": f"{_NET}.3", "node3": f"{_NET}.4"}
#: the session's sshd base directory: every process of its hosts has a HOME below it
_BASE: list[Path] = []


@pytest.fixture(scope="session")
def loopback(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackCluster]:
    why = missing_tools()
    if why:
        unavailable(f"validate tests need a real sshd and rsync: {why}")
    try:
        import ray  # noqa: F401 - only whether it imports
    except ImportError:
        unavailable("validate tests need Ray (pip install -e '.[test]')")
    cluster = LoopbackCluster(tmp_path_factory.mktemp("vsshd"), 3)
    _BASE.append(cluster.base)
    yield cluster
    cluster.close()


def two_host_plan(tmp_path: Path, profile: str = "smoke", extra: str = "") -> planning.Plan:
    """The plan for cluster ``c`` (hosts a and b under /srv/verl), config ``extra`` appended:
    what the tests that judge or tear down a run need, without any host being asked."""
    cfg = tmp_path / "patchctl.toml"
    cfg.write_text('[clusters.c]\nhosts = ["a", "b"]\nroot = "/srv/verl"\n' + extra)
    return planning.make(load_cluster("c", cfg), planning.Options(profile), cwd=tmp_path)


def host_entry(alias: str, root: Path, cvd: str | None = "0", gpus: int = 1, env: dict[str, str] | None = None) -> str:
    table = {
        "PATH": STUB_PATH,
        "NCCL_NVLS_ENABLE": "0",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
        "NVSHMEM_DISABLE_NVLS": "1",
        **({"CUDA_VISIBLE_DEVICES": cvd} if cvd is not None else {}),
        # the stub GPUs' claims (gpulease.py) in the test's own folder, shared by its hosts (one
        # machine): never another test's or another suite's run on the same stub UUIDs
        "PATCHCTL_GPU_LEASES": str(root.parents[2] / "gpuleases"),
        **(env or {}),
    }
    inline = ", ".join(f'{k} = "{v}"' for k, v in table.items())
    return (
        f'{{ ssh = "{alias}", root = "{root}", address = "{ADDRESS[alias]}", gpus = {gpus}, '
        f"ray_port = {_free_port(ADDRESS[alias])}, env = {{ {inline} }} }}"
    )


def _free_port(address: str) -> int:
    """A head port nobody holds (another Ray on this machine may have 6379)."""
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


@dataclass
class Site:
    loop: LoopbackCluster
    dir: Path
    tree: Path

    def root(self, alias: str) -> Path:
        return self.dir / "hosts" / alias / "verl_Uky"

    def config(self, hosts: list[str], name: str = "loop", extra: str = "") -> Path:
        path = self.dir / "patchctl.toml"
        path.write_text(
            f"[clusters.{name}]\nhosts = [\n  " + ",\n  ".join(hosts) + "\n]\n"
            f'root = "/unused"\nssh_config = "{self.loop.ssh_config}"\npython = "{sys.executable}"\n'
            f"preflight_skip = {SKIP}\ntimeout = 20\n{extra}"
        )
        return path

    def cluster(self, hosts: list[str], **kw: str) -> Cluster:
        return load_cluster(kw.get("name", "loop"), self.config(hosts, **kw))

    def hosts(self, cvds: dict[str, str | None], **kw: object) -> list[str]:
        return [host_entry(a, self.root(a), cvd, **kw) for a, cvd in cvds.items()]

    def migrate(self, cluster: Cluster) -> None:
        result = migrate(cluster, self.tree, (), MigrateOptions())
        assert result.ok, [(h.host, h.reason) for h in result.failed]

    def validate(self, *args: str) -> Result:
        """``patchctl validate loop`` in this process on the site's config: every test of a run
        starts the same way and differs only in its options."""
        return CliRunner().invoke(cli, ["validate", "loop", "--config", str(self.dir / "patchctl.toml"), *args])

    def spawn(self, *args: str) -> subprocess.Popen[str]:
        """A run on one Ray CPU into ``run/`` as a child in a session of its own, as a terminal's
        foreground job would be: the tests that signal it need a process group to signal. It
        imports the patchctl this test process runs."""
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "patchctl",
                "validate",
                "loop",
                "--config",
                str(self.dir / "patchctl.toml"),
                "--out",
                str(self.dir / "run"),
                "--ray-cpus",
                "1",
                *args,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )

    def run_json(self, *args: str) -> tuple[int, dict, str]:
        """A run on one Ray CPU into ``run/`` with ``--json``: its exit code, its JSON document
        (after the progress lines) and the whole output, for the tests that judge the verdict."""
        done = self.validate("--json", "--ray-cpus", "1", "--out", str(self.dir / "run"), *args)
        out = done.output
        assert "{\n" in out, out
        return done.exit_code, json.loads(out[out.index("{\n") :]), out


@pytest.fixture
def site(loopback: LoopbackCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Site]:
    monkeypatch.setattr(state, "state_dir", lambda: tmp_path / "migrate-state")
    monkeypatch.chdir(tmp_path)  # the default run directory is ./.patchctl/validate/...
    tree = tmp_path / "src" / "verl_Uky"
    shutil.copytree(HERE / "standin", tree, ignore=shutil.ignore_patterns("__pycache__"))
    git(tree, "init", "-q", "-b", "main")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "stand-in verl")
    yield Site(loopback, tmp_path, tree)
    for h in loopback.hosts:  # a test that stopped a host must not take it from the next one
        if h.proc is None:
            h.start()
    assert ours() == [], "a Ray process of a validate run was left behind"


def ours() -> list[int]:
    """Live processes (not zombies) carrying a validate run's marker that this test session's
    hosts started (their HOME is under its sshd base: another session's runs are not ours)."""
    homes = [f"HOME={b}/".encode() for b in _BASE]
    out = []
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
            state_ = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if f"{MARKER}=".encode() in env and state_ != b"Z" and any(h in env for h in homes):
            out.append(pid)
    return out


@pytest.fixture
def root(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The user's private state folder (statedir.state_root) moved to a fresh short folder: as
    short as the real /tmp/pcv-UID, and gone after the test."""
    base = Path(tempfile.mkdtemp(prefix="pt", dir="/tmp"))
    path = base / "u"
    monkeypatch.setattr(statedir, "state_root", lambda: str(path))
    yield path
    shutil.rmtree(base, ignore_errors=True)
