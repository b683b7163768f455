"""One run per GPU on a host (gpulease.py, gpuusers.py), with real processes holding real flocks.

Each claimant is a Python process of its own: the lease is a flock, which the kernel keeps per
open file and drops when its process ends, so only separate processes show what a second run,
a dead run and two runs started at the same moment see.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchctl import gpulease, gpuusers
from patchctl.gpulease import Gpu, Owner

STUB_BIN = Path(__file__).parent / "validate" / "stub_bin"
GPU = [Gpu(str(i), f"GPU-5a1e0000-0000-0000-0000-00000000000{i}") for i in range(3)]
SRC = str(Path(gpulease.__file__).resolve().parents[1])

#: a claimant: where asked, says "ready" and waits for "go" on stdin (so several claim at one
#: moment), claims, says "held" or "refused BY", then holds until its stdin closes
CLAIMANT = """
import json, sys
from patchctl.gpulease import Gpu, Owner, Refused, acquire
spec = json.loads(sys.argv[1])
if spec.get("wait"):
    print("ready", flush=True)
    sys.stdin.readline()
owner = Owner(spec["run"], "patchctl train", spec["run_dir"], "box", tuple(Gpu(*g) for g in spec["gpus"]),
              spec["host_wide"])
try:
    lease = acquire(owner)
except Refused as exc:
    print("refused", exc.busy[0].by, flush=True)
    sys.exit(0)
print("held", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def leases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "leases"
    monkeypatch.setenv(gpulease.LEASES_ENV, str(folder))
    return folder


def claimant(run: str, gpus: list[Gpu], host_wide: bool = False, wait: bool = False) -> subprocess.Popen[str]:
    spec = {
        "run": run,
        "run_dir": f"/runs/{run}",
        "gpus": [[g.index, g.uuid] for g in gpus],
        "host_wide": host_wide,
        "wait": wait,
    }
    return subprocess.Popen(
        [sys.executable, "-c", CLAIMANT, json.dumps(spec)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
    )


@pytest.fixture
def holders() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
        p.wait()


def hold(holders: list[subprocess.Popen[str]], run: str, gpus: list[Gpu], host_wide: bool = False) -> int:
    p = claimant(run, gpus, host_wide)
    holders.append(p)
    assert p.stdout is not None and p.stdout.readline().strip() == "held"
    return p.pid


def me(run: str, gpus: list[Gpu], host_wide: bool = False) -> Owner:
    return Owner(run, "patchctl validate", f"/runs/{run}", "box", tuple(gpus), host_wide)


def test_two_runs_started_at_the_same_moment_never_both_get_the_gpu(leases: Path) -> None:
    """Six claimants, each started and waiting, told "go" in one loop, ten times over: exactly
    one holds GPU 0 each time."""
    for _ in range(10):
        ps = [claimant(f"run{i}", [GPU[0]], wait=True) for i in range(6)]
        pipes = [(p.stdin, p.stdout) for p in ps if p.stdin and p.stdout]
        assert all(out.readline().strip() == "ready" for _, out in pipes)
        for into, _ in pipes:
            into.write("go\n")
            into.flush()
        said = [out.readline().split()[0] for _, out in pipes]
        for into, _ in pipes:
            into.close()
        for p in ps:
            p.wait()
        assert sorted(said) == ["held"] + ["refused"] * 5, said


def test_a_killed_runs_gpu_is_free_again_and_its_file_goes(leases: Path, holders: list[subprocess.Popen[str]]) -> None:
    pid = hold(holders, "dead", [GPU[0]])
    holders[0].send_signal(signal.SIGKILL)
    holders[0].wait()
    assert len(list(leases.glob("*.lease"))) == 1, "SIGKILL leaves the file; the flock is what counts"
    with gpulease.acquire(me("next", [GPU[0]])) as lease:
        assert lease is not None
        assert [p.name for p in leases.glob("*.lease")] == [lease.path.name], f"pid {pid}'s file was kept"
    assert not list(leases.glob("*.lease")), "a released claim leaves no file"


def test_a_held_gpu_is_refused_naming_the_run_and_other_gpus_are_not(
    leases: Path, holders: list[subprocess.Popen[str]]
) -> None:
    pid = hold(holders, "first", [GPU[1]])
    busy = gpulease.probe(me("second", [GPU[0], GPU[1]]))
    assert [b.gpu for b in busy] == [GPU[1]]
    assert (
        busy[0]
        .reason("box")
        .startswith(
            f"GPU 1 ({GPU[1].uuid}) on box is in use by patchctl train pid {pid} (run folder /runs/first, since "
        )
    )
    with pytest.raises(gpulease.Refused):
        gpulease.acquire(me("second", [GPU[0], GPU[1]]))
    lease = gpulease.acquire(me("third", [GPU[0], GPU[2]]))
    assert lease is not None
    lease.release()


def test_a_host_wide_socket_refuses_other_gpus_but_never_the_runs_own_nodes(
    leases: Path, holders: list[subprocess.Popen[str]]
) -> None:
    """verl's job-id socket is one per host: another run is refused on any GPU, a node of the
    same run (validate's loopback hosts) is not, nor a run whose verl names it per GPU."""
    hold(holders, "first", [GPU[0]], host_wide=True)
    busy = gpulease.probe(me("second", [GPU[1]], host_wide=True))
    assert len(busy) == 1 and busy[0].gpu is None and "per host, not per GPU" in busy[0].how
    assert gpulease.probe(me("first", [GPU[1]], host_wide=True)) == []
    assert gpulease.probe(me("second", [GPU[1]], host_wide=False)) == []
    assert "only one run per host" in gpuusers.fix(busy, "second")


def test_a_gpu_with_a_compute_process_of_no_claim_is_refused(
    tmp_path: Path, leases: Path, monkeypatch: pytest.MonkeyPatch, holders: list[subprocess.Popen[str]]
) -> None:
    """A run of another user, or a trainer started by hand, claims nothing: nvidia-smi shows it.
    The fix names the GPUs neither a process nor another run's claim uses."""
    hold(holders, "elsewhere", [GPU[0]])
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        apps = tmp_path / "apps.csv"
        apps.write_text(f"{sleeper.pid}, {GPU[2].uuid}, 500 MiB\n")
        monkeypatch.setenv("STUB_GPU_APPS", str(apps))
        monkeypatch.setenv("PATH", f"{STUB_BIN}:{os.environ['PATH']}")
        owner, sock = gpuusers.owner_here("patchctl train", "r", "/runs/r", tmp_path, "1,2")
        assert owner.gpus == (GPU[1], GPU[2]) and sock is None
        found = gpuusers.busy(owner, sock)
        assert [(b.gpu, b.by) for b in found] == [(GPU[2], f"pid {sleeper.pid} (sleep)")]
        reason, fix = gpuusers.refusal(owner, found)
        assert "500 MiB" in reason
        assert fix == "wait for that run to end, or set CUDA_VISIBLE_DEVICES to GPUs nobody uses (free here: 1)"
        lease, refused = gpuusers.claim(owner, sock)
        assert lease is None and refused == found and len(list(leases.glob("*.lease"))) == 1
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_bound_weight_sync_socket_of_a_run_without_a_claim_is_refused(leases: Path) -> None:
    """The socket's holder is named from /proc; a socket of another GPU's name is not this run's."""
    short = Path(tempfile.mkdtemp(prefix="gl", dir="/tmp"))  # a socket's path has 108 bytes at most
    prefix = str(short / "rl-colocate-zmq-")
    code = (
        "import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); "
        "print('bound', flush=True); sys.stdin.read()"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code, f"{prefix}{GPU[0].uuid}.sock"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == b"bound"
        per_gpu = gpuusers.WeightSocket(prefix, "gpu")
        found = gpuusers.outside(me("r", [GPU[0], GPU[1]]), per_gpu)
        assert [(b.gpu, b.by.split(" (")[0]) for b in found] == [(GPU[0], f"pid {p.pid}")]
        assert gpuusers.outside(me("r", [GPU[1]]), per_gpu) == []
        # per host (the Ray job id's name): a GPU-named socket is another verl's, no clash
        assert gpuusers.outside(me("r", [GPU[1]]), gpuusers.WeightSocket(prefix, "host")) == []
    finally:
        p.kill()
        p.wait()
    assert gpuusers.bound_sockets(prefix) == [], "a socket of a dead process is not bound"
    shutil.rmtree(short)


@pytest.mark.parametrize(
    ("line", "per"),
    [
        # verl main of 2026-01 (b178a3c), vllm_rollout.py
        ('        self.zmq_handle = f"ipc:///tmp/rl-colocate-zmq-{self.device_uuid}.sock"', "gpu"),
        # verl 0.9 (verl#6246): one name per Ray job, and every fresh cluster's first job is 01000000
        (
            '        return f"ipc:///tmp/rl-colocate-zmq-{job_id}-replica-{replica_rank}-rank-{local_rank}.sock"',
            "host",
        ),
        # verl#6233's: per replica and rank, the same in every job
        ('    return f"ipc:///tmp/rl-colocate-zmq-replica-{self.replica_rank}-rank-{self.rank}.sock"', "host"),
        # verl 0.6.1 / 0.7.0, vllm_rollout_spmd.py: per process
        ('                address = f"ipc:///tmp/verl_vllm_zmq_{pid}_{getpass.getuser()}.ipc"', "process"),
    ],
)
def test_the_socket_is_read_from_the_trees_own_rollout_code(tmp_path: Path, line: str, per: str) -> None:
    code = tmp_path / "verl" / "workers" / "rollout" / "vllm_rollout"
    code.mkdir(parents=True)
    (code / "vllm_rollout.py").write_text(f"def f(self):\n{line}\n")
    sock = gpuusers.weight_socket(tmp_path)
    assert sock is not None and sock.per == per
    assert gpuusers.weight_socket(tmp_path / "nothing") is None


def test_a_release_closes_the_claim_once_and_never_another_file(leases: Path) -> None:
    lease = gpulease.acquire(me("r", [GPU[0]]))
    assert lease is not None
    fd = lease.fd
    lease.release()
    with pytest.raises(OSError):
        os.fstat(fd)
    lease.release()  # a second release (the node's "stopped", then its exit) closes nothing else
    os.fstat(2)


def test_the_folder_of_claims_is_private_and_made_where_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from patchctl.validate.host import statedir

    named = tmp_path / "a" / "b"
    monkeypatch.setenv(gpulease.LEASES_ENV, str(named))
    assert gpulease.folder() == named == gpulease.folder()
    assert named.stat().st_mode & 0o777 == 0o700
    with gpulease.acquire(me("r", [GPU[0]])) as lease:
        assert lease is not None
        assert {p.name: p.stat().st_mode & 0o777 for p in named.iterdir()} == {".mutex": 0o600, lease.path.name: 0o600}
    assert gpulease.acquire(me("r", [])) is None and [p.name for p in named.iterdir()] == [".mutex"]
    monkeypatch.delenv(gpulease.LEASES_ENV)
    monkeypatch.setattr(statedir, "state_root", lambda: str(tmp_path / "pcv"))
    assert gpulease.folder() == tmp_path / "pcv" / "gpuleases" == gpulease.folder()
    assert (tmp_path / "pcv" / "gpuleases").stat().st_mode & 0o777 == 0o700


def test_reading_the_claims_leaves_no_file_open(leases: Path, holders: list[subprocess.Popen[str]]) -> None:
    """A node reads the claims at every start; a file left open per claim would pile up."""
    hold(holders, "first", [GPU[0]])
    hold(holders, "second", [GPU[1]])
    before = sorted(os.listdir("/proc/self/fd"))
    assert len(gpulease.probe(me("third", [GPU[0], GPU[1]]))) == 2
    assert sorted(os.listdir("/proc/self/fd")) == before
