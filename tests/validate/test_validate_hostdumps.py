"""Issue 37 req. 2 on a multi-host run: when the trainer times out, validate takes the stacks of
the run's Ray workers on every host (py-spy, over the ssh it holds) and brings each host's Ray logs
into ``RUN_DIR/hosts/HOST/``, before the head kills the trainer, so that ``doctor RUN_DIR`` names
the host and the function where the run waited. Real sshd hosts on loopback, a real Ray cluster,
a real hung task on the second host."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from validate_helpers import Site, host_entry

from patchctl.validate import hostdumps
from patchctl.validate import plan as planning


def _pyspy() -> None:
    from patchctl.train import hangdump

    if hangdump.pyspy() is None:
        pytest.skip("py-spy is not installed (pip install -e '.[test]')")


def test_a_hang_on_another_host_is_dumped_there_and_named_by_doctor(site: Site) -> None:
    _pyspy()
    hosts = [host_entry("node1", site.root("node1"), "0"), host_entry("node2", site.root("node2"), "1")]
    site.migrate(site.cluster(hosts))
    code, doc, _ = site.run_json("+standin.peer_hang_at=3", "+standin.step_seconds=0.2", "--timeout", "25")
    assert code == 1, doc["cause"]
    run = site.dir / "run"
    # the worker that never returned, dumped on the host it ran on, not the head
    peer = [p for p in (run / "hosts" / "node2" / "stacks").glob("*.txt") if "hold_peer (" in p.read_text()]
    assert peer, sorted(str(p.relative_to(run)) for p in run.rglob("*"))
    assert not any("hold_peer (" in p.read_text() for p in (run / "hosts" / "node1" / "stacks").glob("*.txt"))
    # only the task's worker: Ray's own agents there run no task of the job
    assert [
        p.read_text().splitlines()[0].split(": ", 1)[1] for p in (run / "hosts" / "node2" / "stacks").iterdir()
    ] == ["ray::hold_peer"]
    # each host's Ray session logs came home (the raylet's own among them)
    for host in ("node1", "node2"):
        logs = {p.name for p in (run / "hosts" / host / "ray").iterdir()}
        assert any(n.endswith(("raylet.out", "raylet.err")) for n in logs), (host, sorted(logs))
    out = subprocess.run(
        [sys.executable, "-m", "patchctl", "doctor", str(run)], capture_output=True, text=True, timeout=120
    )
    assert "hang: no step for " in out.stdout and "after step 2" in out.stdout, out.stdout
    assert " on node2 waits in hold_peer (" in out.stdout, out.stdout


NCCL_HANG = Path(__file__).parents[1] / "doctor" / "runs" / "nccl-hang" / "nccl_trace"


def test_the_flight_recorder_dump_of_a_rank_on_another_host_comes_home_and_doctor_names_it(site: Site) -> None:
    """Every raylet starts its workers with the flight recorder on, dumping into its own host's run
    folder; at the timeout each host pokes its ranks' pipes and sends the dumps they write. The
    stand-in's ranks play torch's watchdog with the real dumps of ``tests/doctor/runs/nccl-hang``:
    rank 0 (the driver, on node1) waits in collective #4, rank 1 (``hold_peer``, on node2) never
    got past #3."""
    hosts = [host_entry("node1", site.root("node1"), "0"), host_entry("node2", site.root("node2"), "1")]
    site.migrate(site.cluster(hosts))
    code, doc, _ = site.run_json(
        "+standin.peer_hang_at=3",
        "+standin.step_seconds=0.2",
        f"+standin.peer_dump={NCCL_HANG / 'rank_1'}",
        f"+standin.driver_dump={NCCL_HANG / 'rank_0'}",
        "--timeout",
        "25",
    )
    assert code == 1, doc["cause"]
    run = site.dir / "run"
    # rank 1's dump was written on node2, in node2's run folder (its worker inherited the variables
    # from node2's raylet, naming node2's folder), and came home byte for byte
    came = run / "hosts" / "node2" / "nccl_trace" / "rank_1"
    assert came.read_bytes() == (NCCL_HANG / "rank_1").read_bytes(), sorted(
        str(p.relative_to(run)) for p in run.rglob("*")
    )
    assert not (run / "hosts" / "node1" / "nccl_trace" / "rank_1").exists()
    # each rank asked wrote its dump in time: node2's, and the head's poked twice (hostdump, then train)
    notes = [
        p.read_text() for p in (run / "hosts" / "node2" / "capture.txt", run / "stacks" / "capture.txt") if p.is_file()
    ]
    assert not [n for n in notes if "not all wrote one" in n], notes
    out = subprocess.run(
        [sys.executable, "-m", "patchctl", "doctor", str(run)], capture_output=True, text=True, timeout=120
    )
    assert "rank 1 on node2: last collective #3 nccl:all_reduce (completed)" in out.stdout, out.stdout
    assert "rank 0 on node1: last collective #4 nccl:all_reduce (scheduled)" in out.stdout, out.stdout
    assert "culprit:  rank 1 on node2 is behind: the others wait in collective #4" in out.stdout, out.stdout


@dataclass
class _NoMaster:
    """No control connection: ssh dials the host itself (as it would after a lost master)."""

    socket: Path | None = None


def test_a_host_that_cannot_be_reached_gets_one_line_and_the_others_their_dumps(site: Site) -> None:
    hosts = [host_entry("node1", site.root("node1"), "0"), host_entry("node2", site.root("node2"), "1")]
    cluster = site.cluster(hosts)
    site.migrate(cluster)
    plan = planning.make(cluster, planning.Options(out=site.dir / "run"))
    # patchctl's host side on node1, as preflight sends it there
    ship = planning.ship_argv(plan, plan.head, planning.stage_package(site.dir / "stage"))
    subprocess.run(ship, check=True, capture_output=True, timeout=60)
    site.loop.host("node2").stop()
    notes = hostdumps.capture(plan, [_NoMaster(), _NoMaster()])  # type: ignore[list-item]
    down = (site.dir / "run" / "hosts" / "node2" / "capture.txt").read_text().splitlines()
    assert len(down) == 1 and down[0].startswith("node2: could not be reached for its stacks and Ray logs"), down
    assert notes["node2"] == down
    # the reachable head answered: its folder has its (empty) stacks and no such line
    head = site.dir / "run" / "hosts" / "node1"
    assert (head / "stacks").is_dir() and "could not be reached" not in (head / "capture.txt").read_text()


def test_what_a_host_sends_is_written_only_inside_its_folder(tmp_path: Path) -> None:
    """The host names its logs and pids: a name that climbs out, or a pid that is no number, must
    not put a file anywhere but under ``hosts/HOST/``."""
    from types import SimpleNamespace

    node = SimpleNamespace(label="node2", index=1)
    reply = {
        "stacks": [{"pid": "../../x", "rank": None, "text": "Process 1: x\n"}, {"pid": 7, "rank": 2, "text": "T"}],
        "logs": [{"path": "../../../etc/evil.log", "text": "a"}, {"path": "session_1/logs/raylet.out", "text": "b"}],
        "notes": ["one line"],
    }
    notes = hostdumps.write(tmp_path / "run", node, reply)  # type: ignore[arg-type]
    files = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert files == [
        "run/hosts/node2/capture.txt",
        "run/hosts/node2/ray/etc__evil.log",
        "run/hosts/node2/ray/session_1__logs__raylet.out",
        "run/hosts/node2/stacks/rank-2-pid-7.txt",
    ], files
    assert notes == ["one line"]


def test_a_hosts_flight_recorder_dumps_are_sent_within_bounds_and_never_through_a_link_or_pipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host side reads only regular files named ``rank_R`` in the run's trace folder: a link a
    rank's process planted there (to a file of the user's), a FIFO under a dump's name (reading it
    would block), a pipe, a temp file are left; a dump over the bound is left whole, with a note."""
    import base64
    import os
    import threading
    import time

    from patchctl.validate.host import hostdump

    folder = tmp_path / "nccl_trace"
    folder.mkdir()
    secret = tmp_path / "secret"
    secret.write_bytes(b"the user's own file")
    (folder / "rank_0").write_bytes(b"dump 0")
    (folder / "rank_1").symlink_to(secret)
    os.mkfifo(folder / "rank_2")
    os.mkfifo(folder / "rank_3.pipe")
    (folder / "rank_4.tmp").write_bytes(b"half")
    (folder / "rank_5").write_bytes(b"x" * 11)
    monkeypatch.setattr(hostdump, "PER_DUMP", 10)
    notes: list[str] = []
    sent = hostdump.flight_dumps(folder, notes)
    assert [(d["name"], base64.b64decode(d["data"])) for d in sent] == [("rank_0", b"dump 0")]
    assert notes == [f"{folder / 'rank_5'}: 11 bytes, over what is sent of a flight recorder dump: left there"]
    # at most MAX_DUMPS files, and the bytes of all of them bounded: what does not fit is named
    monkeypatch.setattr(hostdump, "PER_DUMP", 100)
    monkeypatch.setattr(hostdump, "MAX_DUMPS", 1)
    notes = []
    assert [d["name"] for d in hostdump.flight_dumps(folder, notes)] == ["rank_0"]
    assert notes == [f"2 flight recorder dumps in {folder}: only the first 1 were sent"]
    # the wait ends when as many dumps as ranks asked were written after the poke, and no later
    since = time.time() - 1.0
    later = threading.Timer(0.5, lambda: (folder / "rank_6").write_bytes(b"late"))
    later.start()
    t0 = time.monotonic()
    assert hostdump.wait_for_dumps(folder, 1, since + 1.0, wait=5.0)
    assert 0.4 < time.monotonic() - t0 < 3.0
    assert not hostdump.wait_for_dumps(folder, 3, since + 1.0, wait=0.5)


def test_the_flight_recorder_dumps_a_host_sends_land_only_as_rank_files_in_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host names its dumps: a name that climbs out, a pipe's name, bytes that are no base64
    and a dump over the bound are refused here whatever the host side did."""
    import base64
    from types import SimpleNamespace

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    monkeypatch.setattr(hostdumps, "PER_DUMP", 8)
    node = SimpleNamespace(label="node2", index=1)
    reply = {
        "flight": [
            {"name": "../../rank_9", "data": b64(b"out")},
            {"name": "rank_3.pipe", "data": b64(b"p")},
            {"name": "rank_4", "data": "not base64!"},
            {"name": "rank_5", "data": b64(b"123456789")},
            {"name": "rank_1", "data": b64(b"dump one")},
        ]
    }
    notes = hostdumps.write(tmp_path / "run", node, reply)  # type: ignore[arg-type]
    files = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert files == ["run/hosts/node2/capture.txt", "run/hosts/node2/nccl_trace/rank_1"], files
    assert (tmp_path / "run/hosts/node2/nccl_trace/rank_1").read_bytes() == b"dump one"
    assert notes == [
        "node2: flight recorder dump rank_4 arrived broken: left out",
        "node2: flight recorder dump rank_5 (9 bytes) is over what is kept of one (8 bytes): left out",
    ]
    monkeypatch.setattr(hostdumps, "MAX_DUMPS", 1)
    hostdumps.write(tmp_path / "run", node, {"flight": [{"name": f"rank_{i}", "data": b64(b"d")} for i in (7, 8)]})  # type: ignore[arg-type]
    assert sorted(p.name for p in (tmp_path / "run/hosts/node2/nccl_trace").iterdir()) == ["rank_7"]
