"""Every fault of issue 12 ends with a verdict, a one-line cause naming the host, and no Ray
process of the run left anywhere (the ``site`` fixture asserts the last after each test)."""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from validate_helpers import ADDRESS, Site, host_entry, ours


def two_hosts(site: Site, **env: str) -> None:
    hosts = [host_entry("node1", site.root("node1"), "0"), host_entry("node2", site.root("node2"), "1", env=env)]
    site.migrate(site.cluster(hosts))


def test_unreachable_host_stops_before_anything_starts(site: Site) -> None:
    hosts = [host_entry("node1", site.root("node1"), "0")]
    site.migrate(site.cluster(hosts))
    site.config([*hosts, '{ ssh = "node-down", root = "/tmp/nowhere", address = "127.0.0.9" }'])
    code, doc, _ = site.run_json()
    assert code == 1 and doc["verdict"] == "fail" and doc["host"] == "node-down" and doc["stage"] == "preflight"
    assert doc["cause"].startswith("node-down: unreachable (ssh could not connect")
    assert doc["ray"] is None and doc["teardown"] == []
    # the run folder and its validate.json exist although nothing ran (issue 40 req 6)
    saved = json.loads((site.dir / "run" / "validate.json").read_text())
    assert saved["verdict"] == "fail" and saved["stage"] == "preflight" and saved["host"] == "node-down"


def test_worker_that_never_joins_times_out_naming_it_with_its_ray_log(site: Site) -> None:
    # one host's env sends Ray's gRPC through a proxy that is not there: it never reaches the head's GCS
    two_hosts(site, RAY_grpc_enable_http_proxy="1", grpc_proxy="http://127.0.0.1:9", http_proxy="http://127.0.0.1:9")
    code, doc, _ = site.run_json("--ray-timeout", "8")
    assert code == 1 and doc["host"] == "node2" and doc["stage"] == "ray-up"
    assert doc["cause"].startswith(f"node2: its Ray node ({ADDRESS['node2']}) did not join the head within 8 s")
    assert (
        "its Ray log ends: " in doc["cause"]
        and f"Failed to connect to GCS at address {ADDRESS['node1']}" in doc["cause"]
    )
    assert {t["label"]: t["status"] for t in doc["teardown"]} == {"node1": "stopped", "node2": "stopped"}


def test_a_worker_whose_ray_fails_to_start_is_named_at_once_with_its_log(site: Site, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    (broken / "ray").mkdir(parents=True)
    (broken / "ray" / "__init__.py").write_text("raise ImportError('this ray is broken')\n")
    two_hosts(site, PYTHONPATH=str(broken))
    t0 = time.monotonic()
    code, doc, _ = site.run_json("--ray-timeout", "60")
    assert code == 1 and doc["host"] == "node2" and doc["stage"] == "ray-up"
    assert doc["cause"].startswith("node2: Ray did not start (ray start exited with 1); its log ends:")
    assert "this ray is broken" in doc["cause"]
    assert time.monotonic() - t0 < 45  # not the 60 s of --ray-timeout


def test_two_nodes_on_one_gpu_is_named_with_their_cuda_visible_devices(site: Site) -> None:
    hosts = [host_entry("node1", site.root("node1"), "1"), host_entry("node2", site.root("node2"), "1")]
    site.migrate(site.cluster(hosts))
    code, doc, _ = site.run_json()
    assert code == 1 and doc["stage"] == "ray-up"
    assert doc["cause"].startswith(
        "node1: GPU GPU-5a1e0000-0000-0000-0000-000000000001 is seen by more than one Ray "
        "node or rank: node1 (CUDA_VISIBLE_DEVICES=1), node2 (CUDA_VISIBLE_DEVICES=1)"
    )
    assert doc["trained"] is None


def test_trainer_that_dies_gets_doctors_findings_in_the_report(site: Site) -> None:
    two_hosts(site)
    code, doc, _ = site.run_json("+standin.fail_at=3")
    assert code == 1 and doc["host"] == "node1" and doc["stage"] == "watch"
    assert doc["cause"].startswith("node1: trainer exited with 1; doctor: ")
    assert "illegal memory access" in doc["cause"].lower() or "CUDA" in doc["cause"]
    report = json.loads((site.dir / "run" / "report.json").read_text())
    assert report["verdict"] == "fail" and report["doctor"][0]["id"] == "cuda-illegal-memory-access"
    assert "an illegal memory access" in (site.dir / "run" / "train.log").read_text()


def test_a_hung_trainer_is_stopped_at_its_timeout_with_its_stacks_fetched_for_doctor(site: Site) -> None:
    """Issue 37: the head's train takes the hung trainer's stacks with py-spy before it stops it,
    validate fetches them with the log and report, and doctor says where the run waited."""
    from patchctl.train import hangdump

    if hangdump.pyspy() is None:
        pytest.skip("py-spy is not installed (pip install -e '.[test]')")
    site.migrate(site.cluster([host_entry("node1", site.root("node1"), "0")]))
    code, doc, _ = site.run_json("+standin.hang_at=3", "+standin.step_seconds=0.2", "--timeout", "20")
    assert code == 1, doc["cause"]
    run = site.dir / "run"
    assert {"stacks", "ray-status.txt"} <= {Path(f).name for f in doc["fetched"]}
    assert "Autoscaler status" in (run / "ray-status.txt").read_text()  # the cluster the run used
    dumps = (run / "stacks").glob("*.txt")
    assert any("compute_reward (verl/trainer/main_ppo.py:" in d.read_text() for d in dumps)
    out = subprocess.run(
        [sys.executable, "-m", "patchctl", "doctor", str(run)], capture_output=True, text=True, timeout=120
    )
    assert "hang: no step for " in out.stdout and "after step 2" in out.stdout
    assert "waits in compute_reward (verl/trainer/main_ppo.py:" in out.stdout


def test_head_lost_mid_run(site: Site) -> None:
    two_hosts(site)
    head = site.loop.host("node1")
    log = site.dir / "run" / "train.log"

    def pull_the_plug() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if log.exists() and "step:2 " in log.read_text():
                head.stop()
                return
            time.sleep(0.1)

    killer = threading.Thread(target=pull_the_plug)
    killer.start()
    code, doc, _ = site.run_json("+standin.step_seconds=0.5")
    killer.join()
    assert code == 1 and doc["host"] == "node1" and doc["stage"] == "training", (doc["cause"], doc["trained"])
    assert doc["cause"].startswith("node1: the head host was lost during training")
    rows = {t["label"]: t["status"] for t in doc["teardown"]}
    assert rows == {"node1": "unreachable", "node2": "stopped"}
    # the lost head could not remove its Ray temp dir; the next node started on that host does
    from patchctl.validate.host.procs import sweep_stale
    from patchctl.validate.host.statedir import state_root

    left = glob.glob(f"{state_root()}/{doc['run_id']}-0-*")
    assert len(left) == 1 and set(left) <= set(sweep_stale(older_than=0))


def test_ctrl_c_stops_ray_on_every_host(site: Site) -> None:
    two_hosts(site)
    out = site.dir / "run"
    # a terminal's Ctrl-C reaches the whole foreground group: patchctl and its ssh clients
    p = site.spawn("+standin.step_seconds=0.5")  # its --out is site.dir / "run"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (
        (out / "train.log").exists() and "step:2 " in (out / "train.log").read_text()
    ):
        time.sleep(0.1)
    os.killpg(p.pid, signal.SIGINT)
    output, _ = p.communicate(timeout=120)
    assert p.returncode == 130, output
    assert "validate: INTERRUPTED — interrupted (Ctrl-C) during training" in output
    assert "teardown: node1 stopped" in output and "node2 stopped" in output
    assert ours() == []


def test_a_ray_already_running_is_refused_then_joined_with_join_and_left_alone(site: Site) -> None:
    two_hosts(site)
    # short: Ray's socket paths under its temp dir must stay below 108 bytes
    theirs = Path(tempfile.mkdtemp(prefix="pcv-theirs-", dir="/tmp"))
    # started as the user on that host would: their HOME (Ray's ~/.ray/auth_token lives there)
    env = {**os.environ, "RAY_TMPDIR": str(theirs), "HOME": str(site.loop.host("node1").home)}
    env.pop("PATCHCTL_VALIDATE_RUN", None)
    ray = [sys.executable, "-c", "import sys; from ray.scripts.scripts import main; sys.argv[0]='ray'; main()"]
    head = subprocess.Popen(
        [
            *ray,
            "start",
            "--block",
            "--head",
            "--port",
            "0",
            "--node-ip-address",
            ADDRESS["node1"],
            "--num-cpus",
            "1",
            "--num-gpus",
            "1",
            "--include-dashboard=false",
            "--disable-usage-stats",
            "--temp-dir",
            str(theirs),
            "--dashboard-agent-listen-port",
            "0",
        ],
        env={**env, "CUDA_VISIBLE_DEVICES": "0"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_for_raylet(ADDRESS["node1"])
        code, doc, _ = site.run_json()
        assert code == 1 and doc["host"] == "node1" and doc["stage"] == "preflight"
        assert "preflight check 'ray_running' failed: a Ray node is already running here" in doc["cause"]
        assert "pass --join to use it" in doc["cause"]
        code, doc, _ = site.run_json("--join")
        assert code == 0, doc["cause"]
        assert [n["joined_existing"] for n in doc["ray"]["nodes"]] == [True, False]
        assert {t["label"]: t["status"] for t in doc["teardown"]} == {"node1": "joined-left-alone", "node2": "stopped"}
        assert head.poll() is None, "validate stopped a Ray it had only joined"
    finally:
        head.terminate()
        head.wait(timeout=60)
        shutil.rmtree(theirs, ignore_errors=True)


def _wait_for_raylet(address: str) -> None:
    from patchctl.validate.host.procs import raylets

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any(r["address"] == address for r in raylets()):
            return
        time.sleep(0.1)
    raise AssertionError("the pre-existing Ray did not start")


def test_compare_after_a_run_plots_both_reward_curves(site: Site, tmp_path: Path) -> None:
    two_hosts(site)
    code, first, _ = site.run_json()
    assert code == 0, first["cause"]
    earlier = tmp_path / "earlier"
    (site.dir / "run").rename(earlier)
    code, doc, _ = site.run_json("--compare", str(earlier / "report.json"))
    assert code == 0, doc["cause"]
    rows = {r[0]: r[1:] for r in doc["comparison"]["rows"]}
    assert rows["GPUs"] == ["2 node(s) x 1 = 2 x Stub GPU"] * 2
    assert rows["final reward"] == ["0.9", "0.9"] and rows["steps"] == ["40", "40"]
    assert Path(doc["comparison"]["plot"]).is_file() and ours() == []
