"""Issue 37 req. 2: a run that stopped making progress, read from its run directory.

The hang is real: ``hangjob.py`` starts four ranks and plants a reward function that never returns in
one of them, and it is stopped the way ``patchctl train`` stops a run that timed out
(:func:`patchctl.train.launcher.execute`), which takes each process's stacks with the real py-spy
first. The flight recorder dumps in ``runs/nccl-hang`` come from a real NCCL hang on two GPUs (its
README says how). Nothing here is mocked.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from patchctl.doctor import flight, stacks
from patchctl.doctor.rundir import progress, ray_pending
from patchctl.train import hangdump, launcher

HERE = Path(__file__).parent
HANGJOB = HERE / "hangjob.py"
NCCL_HANG = HERE / "runs" / "nccl-hang"
RAY_STATUS = HERE / "runs" / "ray-status-pending.txt"


def _doctor(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "patchctl", "doctor", *args], capture_output=True, text=True, env=env, timeout=120
    )


def _hung_run(run: Path, hang_rank: int = 2, timeout: float = 4.0) -> launcher.Finished:
    argv = (sys.executable, str(HANGJOB), str(run / "work"), "4", str(hang_rank), "3")
    launch = launcher.Launch(argv, HERE, {}, run / "train.log")
    return launcher.execute(launch, time.monotonic(), lambda line, at: None, timeout=timeout)


@pytest.mark.skipif(hangdump.pyspy() is None, reason="py-spy is not installed (pip install -e '.[test]')")
def test_a_run_stopped_at_its_timeout_leaves_each_ranks_stack_and_doctor_names_the_hung_rank(tmp_path):
    run = tmp_path / "run"
    done = _hung_run(run)
    assert done.timed_out
    names = sorted(p.name for p in (run / "stacks").glob("rank-*.txt"))
    assert [n.split("-pid-")[0] for n in names] == ["rank-0", "rank-1", "rank-2", "rank-3"]
    out = _doctor(str(run))
    assert out.returncode == 0, out.stderr
    assert "rank 2 (pid" in out.stdout and "is in compute_reward (hangjob.py:" in out.stdout
    assert "while the other 3 wait in all_reduce" in out.stdout
    js = json.loads(_doctor("--json", str(run)).stdout)
    assert js["hang"]["culprit"].startswith("rank 2 (pid")
    waits = {s["rank"]: s["waiting_at"].split(" ")[0] for s in js["hang"]["stacks"] if s["rank"] is not None}
    assert waits == {0: "all_reduce", 1: "all_reduce", 2: "compute_reward", 3: "all_reduce"}


def test_the_trainer_runs_with_the_flight_recorder_on_and_the_callers_values_win(tmp_path):
    code = "import os; print(os.environ['TORCH_NCCL_DEBUG_INFO_TEMP_FILE'], os.environ['TORCH_NCCL_TRACE_BUFFER_SIZE'])"
    launch = launcher.Launch(
        (sys.executable, "-c", code), tmp_path, {"TORCH_NCCL_TRACE_BUFFER_SIZE": "50"}, tmp_path / "r" / "train.log"
    )
    lines: list[str] = []
    launcher.execute(launch, time.monotonic(), lambda line, at: lines.append(line), timeout=60)
    assert lines == [f"{tmp_path / 'r' / 'nccl_trace' / 'rank_'} 50"]
    assert (tmp_path / "r" / "nccl_trace").is_dir()


def _watchdog(pipe: Path, dump: bytes, stop: threading.Event) -> None:
    """What each rank's NCCL watchdog does: open its pipe without blocking, and when a byte comes,
    write its dump beside it (the prefix without ".pipe")."""
    fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    try:
        while not stop.is_set():
            try:
                if os.read(fd, 1):
                    pipe.with_suffix("").write_bytes(dump)
                    return
            except BlockingIOError:
                pass
            time.sleep(0.02)
    finally:
        os.close(fd)


def test_capture_asks_each_listening_rank_for_its_dump_and_skips_a_pipe_nobody_reads(tmp_path):
    folder = tmp_path / "nccl_trace"
    folder.mkdir()
    os.mkfifo(folder / "rank_0.pipe")
    os.mkfifo(folder / "rank_1.pipe")  # its rank is gone: writing must not block
    stop = threading.Event()
    t = threading.Thread(
        target=_watchdog, args=(folder / "rank_0.pipe", (NCCL_HANG / "nccl_trace/rank_0").read_bytes(), stop)
    )
    t.start()
    time.sleep(0.2)
    try:
        hangdump.capture(tmp_path, sid=-1)  # no process is in session -1: stacks of none
    finally:
        stop.set()
        t.join(5)
    assert (folder / "rank_0").read_bytes() == (NCCL_HANG / "nccl_trace/rank_0").read_bytes()
    assert not (folder / "rank_1").exists()


def test_the_flight_recorder_of_a_real_nccl_hang_names_the_rank_behind():
    out = _doctor(str(NCCL_HANG))
    assert out.returncode == 0, out.stderr
    assert "rank 0: last collective #4 nccl:all_reduce (scheduled)" in out.stdout
    assert "rank 1: last collective #3 nccl:all_reduce (completed)" in out.stdout
    assert "culprit:  rank 1 is behind: the others wait in collective #4 nccl:all_reduce (scheduled)" in out.stdout
    v = flight.read_dir(NCCL_HANG / "nccl_trace")
    assert v is not None and v.behind == (1,) and v.ranks[0].where == "<module> at /root/out/run/h.py:11"


def test_the_json_variant_of_a_dump_reads_the_same(tmp_path):
    (tmp_path / "nccl_trace").mkdir()
    for r in (0, 1):
        doc = flight.load(NCCL_HANG / f"nccl_trace/rank_{r}")
        (tmp_path / f"nccl_trace/rank_{r}").write_text(json.dumps(doc, default=list), encoding="utf-8")
    v = flight.read_dir(tmp_path / "nccl_trace")
    assert v is not None and v.behind == (1,) and v.waiting == "collective #4 nccl:all_reduce (scheduled)"


class _Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # what a hostile dump does: name a function and have pickle call it
        return (os.system, (f"touch {self.marker}",))


def test_a_dump_that_names_code_is_refused_and_the_code_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    (tmp_path / "nccl_trace").mkdir()
    (tmp_path / "nccl_trace/rank_0").write_bytes(pickle.dumps({"entries": [_Evil(marker)]}))
    (tmp_path / "nccl_trace/rank_1").write_bytes((NCCL_HANG / "nccl_trace/rank_1").read_bytes())
    out = _doctor(str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert not marker.exists()
    assert "rank_0 not read: not a flight recorder pickle: it names posix.system" in out.stdout
    with pytest.raises(flight.NotADump):
        flight.load(tmp_path / "nccl_trace/rank_0")
    assert not marker.exists()


def _report(path: Path, at: list[float], ended: float, timed_out: bool) -> Path:
    steps = [{"step": i, "at": t, "metrics": {"critic/score/mean": 0.5}} for i, t in enumerate(at, 1)]
    doc = {"steps": steps, "timed_out": timed_out, "timings": {"trainer_exited": ended}}
    path.mkdir(parents=True, exist_ok=True)
    (path / "report.json").write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_run_whose_steps_stopped_is_a_hang_with_the_idle_time_against_the_median_step(tmp_path):
    run = _report(tmp_path / "run", [10.0, 12.0, 14.0, 16.0], 100.0, True)
    out = _doctor(str(run))
    assert (
        "hang: no step for 84 s after step 4 (at 16 s) until the run timed out at 100 s "
        "(42x the median step time, 2 s)" in out.stdout
    )
    assert "missing:  no py-spy dumps (stacks/)" in out.stdout


def test_a_run_that_kept_stepping_to_its_end_is_no_hang(tmp_path):
    p = progress({"steps": [{"at": t} for t in (10.0, 12.0, 14.0, 16.0)], "timings": {"trainer_exited": 19.0}})
    assert not p.stalled and p.median_step_s == 2.0
    run = _report(tmp_path / "run", [10.0, 12.0, 14.0, 16.0], 19.0, False)
    assert "hang" not in _doctor(str(run)).stdout


def test_a_run_that_timed_out_before_its_first_step_is_a_hang():
    assert progress({"steps": [], "timed_out": True, "timings": {}}).text() == "the run timed out before its first step"


RAY_STACK = """\
Process 101: ray::WorkerDict.update_actor
Python v3.10.12 (/usr/bin/python3.10)

Thread 101 (idle): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:2050)
    wrapper (torch/distributed/c10d_logger.py:83)
    update_actor (verl/workers/fsdp_workers.py:611)
Thread 140 (idle): "Thread-1"
    wait (threading.py:324)

Process 102: ray::WorkerDict.update_actor
Python v3.10.12 (/usr/bin/python3.10)

Thread 102 (idle): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:2050)
    wrapper (torch/distributed/c10d_logger.py:83)
    update_actor (verl/workers/fsdp_workers.py:611)

Process 103: ray::WorkerDict.update_actor
Python v3.10.12 (/usr/bin/python3.10)

Thread 103 (active): "MainThread"
    read (safetensors/torch.py:311)
    load_checkpoint (verl/utils/checkpoint.py:88)
    update_actor (verl/workers/fsdp_workers.py:602)
"""


def test_ray_stack_output_names_the_worker_that_is_elsewhere():
    found = stacks.parse(RAY_STACK, "ray-stack.txt")
    assert [s.pid for s in found] == [101, 102, 103]
    odd = stacks.odd_one(found)
    assert odd is not None and odd.stack.pid == 103 and odd.others == 2
    assert str(odd.stack.waiting_at()) == "read (safetensors/torch.py:311)"


DRIVER_STACK = """\
Process 50: python3 -m verl.trainer.main_ppo
Python v3.10.12 (/usr/bin/python3.10)

Thread 50 (idle): "MainThread"
    wait (threading.py:327)
    get (ray/_private/worker.py:2772)
    wrapper (ray/_private/client_mode_hook.py:103)
    execute_all_sync (verl/single_controller/ray/base.py:480)
    fit (verl/trainer/ppo/ray_trainer.py:1030)
"""


def test_the_frame_shown_is_what_the_process_waits_on_not_the_waiting_machinery():
    (driver,) = stacks.parse(DRIVER_STACK, "pid-50.txt")
    assert str(driver.waiting_at()) == "execute_all_sync (verl/single_controller/ray/base.py:480)"
    assert driver.key() == ("execute_all_sync", "fit")


def test_two_processes_elsewhere_are_no_single_culprit():
    text = RAY_STACK + RAY_STACK.split("\n\n", 4)[-1].replace("103", "104").replace("read (", "write (")
    assert len(stacks.parse(text, "ray-stack.txt")) == 4
    assert stacks.odd_one(stacks.parse(text, "ray-stack.txt")) is None


def test_ray_status_pending_demands_are_what_the_run_waits_for():
    pending = ray_pending(RAY_STATUS.read_text(encoding="utf-8"))
    assert any("{'GPU': 8.0}" in p for p in pending), pending
    assert not any("no pending" in p or "no failures" in p for p in pending)


def _fake_torch(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """``torch.jit._pickle`` as torch has it, so that pickle writes the globals torch's C++ pickler writes
    (``build_intlist`` and friends); removed again before the dump is read, as on a machine without torch."""
    mod = types.ModuleType("torch.jit._pickle")

    def build_intlist(data):
        return data

    def restore_type_tag(value, type_str):
        return value

    for fn in (build_intlist, restore_type_tag):
        fn.__module__, fn.__qualname__ = mod.__name__, fn.__name__
        setattr(mod, fn.__name__, fn)
    for name in ("torch", "torch.jit"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    return mod


class _Call:
    def __init__(self, fn, *args) -> None:
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def test_the_list_builders_torchs_pickler_names_are_read_as_plain_values(tmp_path, monkeypatch):
    mod = _fake_torch(monkeypatch)
    entry = {
        "collective_seq_id": 7,
        "input_sizes": _Call(mod.build_intlist, [3, 4]),
        "pg_id": _Call(mod.restore_type_tag, 0, "int"),
    }
    (tmp_path / "rank_0").write_bytes(pickle.dumps({"entries": [entry]}, protocol=2))
    monkeypatch.undo()  # no torch here when it is read
    assert "torch.jit._pickle" not in sys.modules
    doc = flight.load(tmp_path / "rank_0")
    assert doc["entries"][0]["input_sizes"] == [3, 4] and doc["entries"][0]["pg_id"] == 0


class _Persistent(pickle.Pickler):
    def persistent_id(self, obj):
        return "tensor-0" if isinstance(obj, bytearray) else None


def test_a_dump_holding_persistent_objects_is_refused(tmp_path):
    buf = io.BytesIO()
    _Persistent(buf, protocol=2).dump({"entries": [bytearray(b"x")]})
    (tmp_path / "rank_0").write_bytes(buf.getvalue())
    with pytest.raises(flight.NotADump, match="persistent objects"):
        flight.load(tmp_path / "rank_0")


def test_a_dump_over_the_size_limit_is_refused_and_one_at_it_is_read(monkeypatch):
    dump = NCCL_HANG / "nccl_trace/rank_0"
    monkeypatch.setattr(flight, "MAX_BYTES", dump.stat().st_size)
    assert flight.load(dump)["version"] == "2.10"
    monkeypatch.setattr(flight, "MAX_BYTES", dump.stat().st_size - 1)
    with pytest.raises(flight.NotADump, match="larger than"):
        flight.load(dump)


def test_a_dump_that_is_broken_json_is_named_so(tmp_path):
    (tmp_path / "rank_0").write_text('{"entries": [', encoding="utf-8")
    with pytest.raises(flight.NotADump, match="not JSON"):
        flight.load(tmp_path / "rank_0")


@pytest.mark.parametrize("doc", [[1, 2], {"entries": 5}, {"version": "2.10", "entries": {"0": {}}}])
def test_a_pickle_that_is_no_dump_of_entries_is_refused(tmp_path, doc):
    (tmp_path / "rank_0").write_bytes(pickle.dumps(doc, protocol=2))
    with pytest.raises(flight.NotADump, match="has no 'entries' list"):
        flight.load(tmp_path / "rank_0")


def test_a_run_directory_whose_report_is_broken_is_a_one_line_error(tmp_path):
    (tmp_path / "report.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "train.log").write_text("step:1 - critic/score/mean:0.5\n", encoding="utf-8")
    out = _doctor(str(tmp_path))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and f"{tmp_path / 'report.json'}: not JSON (line 1" in out.stderr


def test_the_flight_recorder_dumps_of_every_host_are_read_each_rank_once_and_named_with_its_host(tmp_path):
    """validate brings each host's dumps into hosts/HOST/nccl_trace (the head's run folder's are
    also fetched into nccl_trace/): a rank is read once, named with the host it dumped on; a host's
    folder that is a link is not read."""
    run = tmp_path / "run"
    dumps = NCCL_HANG / "nccl_trace"
    for rel, src in [
        ("nccl_trace/rank_0", "rank_0"),
        ("hosts/node1/nccl_trace/rank_0", "rank_0"),
        ("hosts/node2/nccl_trace/rank_1", "rank_1"),
        ("elsewhere/rank_2", "rank_1"),
    ]:
        (run / rel).parent.mkdir(parents=True, exist_ok=True)
        (run / rel).write_bytes((dumps / src).read_bytes())
    (run / "hosts/node3").mkdir()
    (run / "hosts/node3/nccl_trace").symlink_to(run / "elsewhere")
    out = _doctor(str(run))
    assert out.returncode == 0, out.stderr
    assert "rank 0 on node1: last collective #4 nccl:all_reduce (scheduled)" in out.stdout, out.stdout
    assert "rank 1 on node2: last collective #3 nccl:all_reduce (completed)" in out.stdout, out.stdout
    assert "culprit:  rank 1 on node2 is behind: the others wait in collective #4" in out.stdout, out.stdout
    ranks = json.loads(_doctor("--json", str(run)).stdout)["hang"]["flight_recorder"]["ranks"]
    assert [(r["rank"], r["host"]) for r in ranks] == [(0, "node1"), (1, "node2")]


def test_capture_counts_a_dump_the_rank_writes_again_where_an_earlier_poke_left_one(tmp_path):
    """validate's hostdump pokes the head's ranks before train's capture does: the rank then writes
    its dump again under the same name, which is this capture's dump (no wait to its bound, no note)."""
    folder = tmp_path / "nccl_trace"
    folder.mkdir()
    os.mkfifo(folder / "rank_0.pipe")
    (folder / "rank_0").write_bytes(b"the dump of the first poke")
    os.utime(folder / "rank_0", (time.time() - 30, time.time() - 30))
    stop = threading.Event()
    dump = (NCCL_HANG / "nccl_trace/rank_0").read_bytes()
    t = threading.Thread(target=_watchdog, args=(folder / "rank_0.pipe", dump, stop))
    t.start()
    time.sleep(0.2)
    try:
        t0 = time.monotonic()
        notes = hangdump.capture(tmp_path, sid=-1)
    finally:
        stop.set()
        t.join(5)
    assert (folder / "rank_0").read_bytes() == dump
    assert not [n for n in notes if "flight recorder" in n], notes
    assert time.monotonic() - t0 < hangdump.FLIGHT_WAIT / 2
