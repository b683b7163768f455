"""Who else uses a GPU (gpuusers.py), as preflight's ``gpu_lease`` row, a node's hold and
``train``'s refusal say it: the stand-in nvidia-smi's three GPUs and its compute processes (a
file of lines, as nvidia-smi prints them), real processes holding real claims and real sockets,
a tree's real rollout files. test_gpulease.py has the claims themselves; these are the answers
built on them, found by benchmarks/mutation.py's ``gpuusers`` section."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchctl import gpulease, gpuusers
from patchctl.errors import GpuInUse
from patchctl.gpulease import Busy, Gpu, Owner

STUB_BIN = Path(__file__).parent / "validate" / "stub_bin"
GPU = [Gpu(str(i), f"GPU-5a1e0000-0000-0000-0000-00000000000{i}") for i in range(3)]
SRC = str(Path(gpulease.__file__).resolve().parents[1])
#: a process binding a unix socket at argv[1], holding it until its stdin closes
BINDER = (
    "import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); "
    "print('b', flush=True); sys.stdin.read()"
)
#: a run of another patchctl holding its claim until its stdin closes
HOLDER = """
import sys
from patchctl.gpulease import Gpu, Owner, acquire
lease = acquire(Owner("other", "patchctl train", "/runs/other", "box", (Gpu(sys.argv[1], sys.argv[2]),), False))
print("held", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in nvidia-smi first on PATH, its compute processes the lines of the file returned
    (none until written), the claims in a folder of this test's own."""
    monkeypatch.setenv("PATH", f"{STUB_BIN}:{os.environ['PATH']}")
    monkeypatch.setenv(gpulease.LEASES_ENV, str(tmp_path / "leases"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    apps = tmp_path / "apps.csv"
    apps.write_text("")
    monkeypatch.setenv("STUB_GPU_APPS", str(apps))
    return apps


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    p = subprocess.Popen(["sleep", "60"])
    yield p
    p.kill()
    p.wait()


@pytest.fixture
def other_run() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for p in started:
        p.kill()
        p.wait()


def hold_elsewhere(started: list[subprocess.Popen[str]], gpu: Gpu) -> None:
    p = subprocess.Popen(
        [sys.executable, "-c", HOLDER, gpu.index, gpu.uuid],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    started.append(p)
    assert p.stdout is not None and p.stdout.readline().strip() == "held"


def me(gpus: list[Gpu], run: str = "r", host_wide: bool = False) -> Owner:
    return Owner(run, "patchctl validate", f"/runs/{run}", "box", tuple(gpus), host_wide)


def rollout(root: Path, *lines: str) -> Path:
    code = root / "verl" / "workers" / "rollout"
    code.mkdir(parents=True, exist_ok=True)
    for i, line in enumerate(lines):
        (code / f"r{i}.py").write_text(f"def f(self):\n{line}\n")
    return root


# -- the tree's socket ----------------------------------------------------------------------


def test_of_several_socket_names_the_one_shared_most_widely_decides(tmp_path: Path) -> None:
    per_gpu = '    a = f"ipc:///tmp/rl-colocate-zmq-{self.device_uuid}.sock"'
    per_host = '    b = f"ipc:///tmp/rl-colocate-zmq-{job_id}-rank-{rank}.sock"'
    per_pid = '    c = f"ipc:///tmp/verl_vllm_zmq_{pid}.ipc"'
    # found in file order: each case lists the wider name after a narrower one
    assert gpuusers.weight_socket(rollout(tmp_path / "a", per_pid, per_gpu)) == gpuusers.WeightSocket(
        "/tmp/rl-colocate-zmq-", "gpu"
    )
    assert gpuusers.weight_socket(rollout(tmp_path / "b", per_pid, per_gpu, per_host)) == gpuusers.WeightSocket(
        "/tmp/rl-colocate-zmq-", "host"
    )
    assert gpuusers.weight_socket(rollout(tmp_path / "c", per_pid)) == gpuusers.WeightSocket(
        "/tmp/verl_vllm_zmq_", "process"
    )


def test_a_socket_outside_tmp_and_a_folder_named_like_code_are_passed_over(tmp_path: Path) -> None:
    root = rollout(tmp_path, '    a = f"ipc:///run/user/zmq-{self.device_uuid}.sock"')
    (root / "verl" / "workers" / "rollout" / "odd.py").mkdir()  # rglob finds it; it cannot be read
    assert gpuusers.weight_socket(root) is None


# -- the GPUs and what uses them ------------------------------------------------------------


def test_the_gpus_of_a_run_are_the_visible_ones_first_count_once_each(
    smi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert gpuusers.gpus(None) == tuple(GPU)
    assert gpuusers.gpus("2,0") == (GPU[2], GPU[0])
    assert gpuusers.gpus("2,0", 1) == (GPU[2],)
    assert gpuusers.gpus("1,1") == (GPU[1],)  # two ranks on one GPU: one claim
    assert gpuusers.gpus("7") == ()  # no such GPU here
    owner, sock = gpuusers.owner_here("patchctl train", "r", "/runs/r", Path("/nonexistent"), "1,2", 1)
    assert (owner.run, owner.command, owner.run_dir, owner.host) == (
        "r",
        "patchctl train",
        "/runs/r",
        socket.gethostname(),
    )
    assert owner.gpus == (GPU[1],) and not owner.host_wide and sock is None


def test_compute_processes_are_read_as_nvidia_smi_lists_them(smi: Path) -> None:
    smi.write_text(
        f"12, {GPU[0].uuid}, 10 MiB\n"
        f"[Not Supported], {GPU[1].uuid}, 5 MiB\n"  # no pid: not a process we can name
        f"13, {GPU[2].uuid}, 1,0 MiB\n"  # a comma in the memory: not nvidia-smi's
        f"14, {GPU[1].uuid}, 7 MiB\n"
    )
    assert gpuusers.compute_apps() == [(12, GPU[0].uuid, "10 MiB"), (14, GPU[1].uuid, "7 MiB")]


def test_a_compute_process_of_this_very_process_is_not_another_user(
    smi: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    smi.write_text(f"{os.getpid()}, {GPU[0].uuid}, 10 MiB\n{sleeper.pid}, {GPU[1].uuid}, 20 MiB\n")
    found = gpuusers.outside(me([GPU[0], GPU[1]]), None)
    assert found == [
        Busy(
            GPU[1],
            f"pid {sleeper.pid} (sleep)",
            "a compute process on it (20 MiB) that patchctl did not start for this run",
        )
    ]
    # a per-process socket never clashes: the compute processes alone
    assert gpuusers.outside(me([GPU[0], GPU[1]]), gpuusers.WeightSocket("/tmp/x-", "process")) == found
    assert gpuusers.outside(me([GPU[0]]), None) == []


def test_a_process_that_has_gone_is_named_as_not_visible() -> None:
    p = subprocess.Popen(["true"])
    p.wait()
    assert gpuusers._name(p.pid) == f"pid {p.pid} (not visible from here)"


@pytest.fixture
def bound() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A real process with a unix socket bound at a short /tmp path named per GPU 0."""
    short = Path(tempfile.mkdtemp(prefix="gu", dir="/tmp"))
    prefix = str(short / "zmq-")
    p = subprocess.Popen(
        [sys.executable, "-c", BINDER, f"{prefix}{GPU[0].uuid}.sock"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert p.stdout is not None and p.stdout.readline().strip() == b"b"
    yield prefix, p
    p.kill()
    p.wait()
    shutil.rmtree(short)


def test_a_bound_socket_is_found_with_its_holder(bound: tuple[str, subprocess.Popen[bytes]]) -> None:
    prefix, p = bound
    ((path, inode),) = gpuusers.bound_sockets(prefix)
    assert path == f"{prefix}{GPU[0].uuid}.sock" and inode > 0
    assert gpuusers.socket_holder(inode) == p.pid
    assert gpuusers.socket_holder(1) is None
    assert gpuusers.bound_sockets(prefix + "nothing-") == []


def test_a_socket_named_per_host_forbids_every_gpu(bound: tuple[str, subprocess.Popen[bytes]], tmp_path: Path) -> None:
    """A socket of the per-host name (no GPU in it) is any run's of that verl: the host as a whole
    is busy, and the only fix is to wait."""
    prefix, _ = bound
    plain = Path(prefix + "host.sock")
    q = subprocess.Popen([sys.executable, "-c", BINDER, str(plain)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert q.stdout is not None and q.stdout.readline().strip() == b"b"
        found = gpuusers.outside(me([GPU[1]]), gpuusers.WeightSocket(prefix, "host"))
        assert [(b.gpu, b.by.split(" (")[0]) for b in found] == [(None, f"pid {q.pid}")]
        assert found[0].how == f"it has verl's weight-sync socket {plain} bound"
        assert gpuusers.fix(found, "r").startswith("wait for that run to end: with this verl only one run per host")
    finally:
        q.kill()
        q.wait()


# -- the answers ------------------------------------------------------------------------------


def test_the_fix_names_the_gpus_nobody_uses(
    smi: Path, sleeper: subprocess.Popen[bytes], other_run: list[subprocess.Popen[str]]
) -> None:
    hold_elsewhere(other_run, GPU[0])
    smi.write_text(f"{sleeper.pid}, {GPU[2].uuid}, 1 MiB\n")
    busy_one = [Busy(GPU[1], "x", "y")]
    assert (
        gpuusers.fix(busy_one, "r")
        == "wait for that run to end, or set CUDA_VISIBLE_DEVICES to other GPUs (none is free here now)"
    )
    smi.write_text("")
    assert gpuusers.fix(busy_one, "r", "hosts[i].env.CUDA_VISIBLE_DEVICES") == (
        "wait for that run to end, or set hosts[i].env.CUDA_VISIBLE_DEVICES to GPUs nobody uses (free here: 2)"
    )
    # the run's own claim is no other run's
    assert "free here: 0,2" in gpuusers.fix(busy_one, "other")


def test_a_refusal_counts_the_other_users(smi: Path) -> None:
    found = [Busy(GPU[0], "pid 1 (a)", "how"), Busy(GPU[1], "pid 2 (b)", "how"), Busy(GPU[2], "pid 3 (c)", "how")]
    reason, _ = gpuusers.refusal(me([GPU[0]]), found)
    assert reason == f"GPU 0 ({GPU[0].uuid}) on box is in use by pid 1 (a): how (and 2 more)"
    assert gpuusers.refusal(me([GPU[0]]), found[:2])[0].endswith(": how (and 1 more)")
    assert gpuusers.refusal(me([GPU[0]]), found[:1])[0] == f"GPU 0 ({GPU[0].uuid}) on box is in use by pid 1 (a): how"


def test_train_s_hold_refuses_a_gpu_another_run_claimed_or_uses(
    smi: Path, sleeper: subprocess.Popen[bytes], other_run: list[subprocess.Popen[str]]
) -> None:
    hold_elsewhere(other_run, GPU[0])
    with pytest.raises(GpuInUse) as refused:
        gpuusers.hold(me([GPU[0]]), None)
    assert "is in use by patchctl train" in str(refused.value)
    smi.write_text(f"{sleeper.pid}, {GPU[1].uuid}, 3 MiB\n")
    with pytest.raises(GpuInUse) as used:
        gpuusers.hold(me([GPU[1]]), None)
    assert f"pid {sleeper.pid} (sleep)" in str(used.value)
    # refused for a compute process: the claim made first is given back, the GPU free for others
    assert gpulease.claimed("someone") == {GPU[0].uuid}
    lease = gpuusers.hold(me([GPU[2]]), None)
    assert lease is not None and gpulease.claimed("someone") == {GPU[0].uuid, GPU[2].uuid}
    lease.release()


def test_preflight_s_row_says_who_holds_the_gpus_and_what_to_do(
    smi: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, other_run: list[subprocess.Popen[str]]
) -> None:
    monkeypatch.chdir(rollout(tmp_path / "tree", '    b = f"ipc:///tmp/rl-colocate-zmq-{job_id}-rank-{rank}.sock"'))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    row = gpuusers.preflight_row({"run": "r", "gpus": 1})
    assert row == {
        "check": "gpu_lease",
        "status": "pass",
        "value": f"no other live run holds GPU 1 ({GPU[1].uuid}) "
        "(one run per host: this verl's weight-sync socket is named per host)",
        "fix": "",
    }
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    assert gpuusers.preflight_row({"run": "r", "gpus": 1})["value"] == "no GPU to claim here"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    hold_elsewhere(other_run, GPU[0])
    row = gpuusers.preflight_row({"run": "r", "gpus": 2})
    assert row["status"] == "fail" and row["value"].startswith(
        f"GPU 0 ({GPU[0].uuid}) on {socket.gethostname()} is in use by patchctl train"
    )
    assert row["fix"].startswith("wait for that run to end, or set hosts[i].env.CUDA_VISIBLE_DEVICES to ")
    # the node's hold: the same refusal as an event, no claim left behind
    lease, event = gpuusers.node_claim({"marker": "r.0", "gpus": 2})
    assert lease is None and event == {"event": "refused", "lease": row["value"], "fix": row["fix"]}
    assert gpulease.claimed("someone") == {GPU[0].uuid}
    # a free GPU: held for the node's life, by the run its marker names
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    lease, event = gpuusers.node_claim({"marker": "r.1", "gpus": 1, "run_rel": "runs/r"})
    assert event is None and lease is not None
    assert (lease.owner.run, lease.owner.run_dir, lease.owner.gpus) == ("r", str(Path.cwd() / "runs/r"), (GPU[1],))
    assert gpulease.claimed("someone") == {GPU[0].uuid, GPU[1].uuid}
    lease.release()


def test_a_validate_host_s_claim_is_named_by_its_run_folder_or_its_run(
    smi: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,1,0")
    owner, sock = gpuusers.validate_owner({"run_rel": "runs/x", "gpus": 2}, "x")
    assert owner.run == "x" and owner.command == "patchctl validate" and owner.run_dir == str(tmp_path / "runs/x")
    assert owner.gpus == (GPU[2], GPU[1]) and sock is None and not owner.host_wide
    owner, _ = gpuusers.validate_owner({}, "y")
    assert owner.run_dir == "validate run y" and owner.gpus == (GPU[2], GPU[1], GPU[0])
