"""Issue 24 on the loopback hosts with real Ray: the run's cluster keeps strangers out, listens
only where it must, keeps its state private, stops itself when patchctl goes silent, names a
node that is not its own, and a Ctrl-C at any step is INTERRUPTED. Every test attacks a real
run; the ``site`` fixture then asserts that no process of the run is left."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest
from ray_attack import (
    STRANGER,
    WILDCARD,
    StrangerNode,
    as_other_user,
    listeners,
    open_head,
    run_gcs,
    stranger_runs_code,
    training,
    wait_for,
)
from validate_helpers import ADDRESS, Site, host_entry, ours

from patchctl.validate import plan as planning
from patchctl.validate.host import procs, statedir


def one_host(site: Site, **env: str) -> None:
    site.migrate(site.cluster([host_entry("node1", site.root("node1"), "0", env=env)]))


def test_a_stranger_without_the_token_neither_joins_nor_runs_code(site: Site) -> None:
    # the control: on this Ray, with token auth off (as below 2.52), the same stranger gets in,
    # so the assertions on the run below can fail
    head, gcs, temp = open_head(ADDRESS["node2"])
    stranger = StrangerNode(gcs)
    try:
        assert stranger.joined(), "the control failed: a stranger could not join a cluster without auth"
        assert stranger_runs_code(gcs), "the control failed: a stranger could not run code without auth"
    finally:
        stranger.stop()
        head.terminate()
        head.wait(timeout=60)
        shutil.rmtree(temp, ignore_errors=True)
    one_host(site)
    seen: dict[str, bool] = {}

    def attack() -> None:
        gcs = run_gcs(ADDRESS["node1"])
        wait_for(training(site.dir / "run" / "train.log"), 120, "training")
        node = StrangerNode(gcs)
        try:
            seen["joined"] = node.joined()
        finally:
            node.stop()
        seen["ran code"] = stranger_runs_code(gcs)

    attacker = threading.Thread(target=attack)
    attacker.start()
    code, doc, _ = site.run_json("+standin.step_seconds=0.5")
    attacker.join()
    assert seen == {"joined": False, "ran code": False}
    assert code == 0, doc["cause"]
    assert {k: v["outcome"] for k, v in doc["ray"]["auth"].items()} == {"driver": "refused", "gcs": "refused"}
    assert doc["insecure_ray"] is False


def test_a_cluster_that_lets_a_stranger_in_is_stopped_unless_insecure_ray(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    # sabotage: the run's processes get no token, as on a Ray that ignores it
    monkeypatch.setattr(planning.Plan, "ray_auth", property(lambda self: {"RAY_AUTH_MODE": "disabled"}))
    one_host(site)
    code, doc, _ = site.run_json()
    assert code == 1 and doc["stage"] == "ray-up" and doc["host"] == "node1", doc["cause"]
    assert doc["cause"].startswith(
        "node1: the run's Ray cluster did not prove that it refuses callers without the "
        "token (driver: accepted (a driver without the token ran a task"
    )
    assert doc["trained"] is None and [t["status"] for t in doc["teardown"]] == ["stopped"]
    code, doc, out = site.run_json("--insecure-ray")
    assert code == 0 and doc["insecure_ray"] is True, doc["cause"]
    assert doc["ray"]["auth"]["gcs"]["outcome"] == "accepted"
    assert "--insecure-ray: the cluster is NOT required to refuse callers without its token" in out


def test_a_ray_that_cannot_enforce_the_token_is_refused_before_anything_starts(site: Site) -> None:
    old = site.dir / "old-ray"
    meta = old / "ray-2.49.2.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: ray\nVersion: 2.49.2\n")
    one_host(site, PYTHONPATH=str(old))
    code, doc, _ = site.run_json()
    assert code == 1 and doc["stage"] == "preflight" and doc["ray"] is None and doc["teardown"] == []
    assert doc["cause"].startswith("node1: preflight check 'ray_auth' failed: Ray 2.49.2 ignores the run's token")
    assert "pip install 'ray>=2.52' into the cluster's python; or, on a cluster firewalled" in doc["cause"]
    listen = next(r for r in doc["preflight"][0]["rows"] if r["check"] == "ray_listen")
    assert listen["status"] == "warn" and "binds on all interfaces: GCS" in listen["value"]


def test_a_live_run_listens_only_where_it_must_and_its_state_is_private(site: Site) -> None:
    one_host(site)
    found: dict[str, object] = {}

    def look() -> None:
        wait_for(training(site.dir / "run" / "train.log"), 120, "training")
        mine = set(ours())
        found["listeners"] = [row for row in listeners() if row[2] in mine]
        found["chosen"] = _chosen_ports(mine)
        marker = _marker(mine)
        session = statedir.session_dirs(marker)[0]
        sockets = next(Path(session).glob("session_2*/sockets"))
        found["root mode"] = oct(os.stat(statedir.state_root()).st_mode & 0o777)
        found["plant in sockets/"] = as_other_user(lambda: open(sockets / "planted", "w").close())
        found["list the root"] = as_other_user(lambda: os.listdir(statedir.state_root()))
        # another user's sweep, then this user's own, while the run is live
        found["their sweep"] = as_other_user(lambda: procs.sweep_stale(older_than=0))
        found["own sweep"] = procs.sweep_stale(older_than=0)
        found["raylet socket"] = (sockets / "raylet").exists()

    looker = threading.Thread(target=look)
    looker.start()
    code, doc, _ = site.run_json("+standin.step_seconds=0.3")
    looker.join()
    assert code == 0, doc["cause"]
    rows = found["listeners"]
    assert rows, "no listener of the run was seen"
    chosen = found["chosen"]
    assert chosen and not [r for r in rows if r[1] in chosen and r[0] in WILDCARD], rows
    assert all(r[0] == ADDRESS["node1"] for r in rows if r[1] in chosen), rows
    assert not [r for r in rows if r[1] in (8265, 10001, 52365)], "a dashboard or client server was started"
    # what still binds every interface is Ray's own, as preflight says: the GCS, the raylet, and
    # Ray's core workers (drivers included) in the worker port range
    assert all(r[3] in ("gcs_server", "raylet") or 10002 <= r[1] <= 19999 for r in rows if r[0] in WILDCARD), rows
    listen = next(r for r in doc["preflight"][0]["rows"] if r["check"] == "ray_listen")
    assert "GCS" in listen["value"] and "raylet" in listen["value"]
    assert found["root mode"] == "0o700"
    assert found["plant in sockets/"][0] is False and "Permission denied" in found["plant in sockets/"][1]
    assert found["list the root"][0] is False
    assert found["their sweep"] == (True, "[]") and found["own sweep"] == [] and found["raylet socket"] is True


def _chosen_ports(pids: set[int]) -> set[int]:
    """The ports patchctl put on ``ray start``'s command line (the GCS port is the user's)."""
    out = set()
    for pid in pids:
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue
        for flag in ("--dashboard-agent-listen-port", "--dashboard-port", "--ray-client-server-port"):
            if flag in args:
                out.add(int(args[args.index(flag) + 1]))
    return out


def _marker(pids: set[int]) -> str:
    for pid in pids:
        for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
            if item.startswith(f"{procs.MARKER}=".encode()):
                return item.split(b"=", 1)[1].decode()
    raise AssertionError("no marked process")


def test_a_frozen_patchctl_loses_its_lease_and_the_hosts_stop_ray(site: Site) -> None:
    one_host(site)
    lease = 4.0
    p = site.spawn("--lease", str(lease), "+standin.step_seconds=0.5")
    try:
        wait_for(training(site.dir / "run" / "train.log"), 120, "training")
        os.kill(p.pid, signal.SIGSTOP)  # a suspended laptop: its ssh connections stay up, it says nothing
        frozen = time.monotonic()
        wait_for(lambda: ours() == [], lease + 20, "the hosts stopping Ray without patchctl")
        took = time.monotonic() - frozen
    finally:
        os.kill(p.pid, signal.SIGCONT)
    output, _ = p.communicate(timeout=120)
    assert took < lease + 20 and p.returncode == 1, output
    assert "validate: FAIL" in output


def test_a_node_the_run_did_not_start_is_named_and_fails_the_run(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[planning.Plan] = []
    make = planning.make
    monkeypatch.setattr(planning, "make", lambda *a, **k: made.append(make(*a, **k)) or made[-1])
    one_host(site)
    strangers: list[StrangerNode] = []

    def join() -> None:
        gcs = run_gcs(ADDRESS["node1"])
        wait_for(training(site.dir / "run" / "train.log"), 120, "training")
        strangers.append(StrangerNode(gcs, made[0].auth_token))  # someone holding the token
        strangers[0].joined()

    joiner = threading.Thread(target=join)
    joiner.start()
    try:
        code, doc, _ = site.run_json("+standin.step_seconds=0.3")
    finally:
        joiner.join()
        for s in strangers:
            s.stop()
    assert code == 1 and doc["stage"] == "census" and doc["host"] == "node1", doc["cause"]
    assert doc["cause"].startswith(
        f"node1: 1 node(s) not started by this run joined its Ray cluster: {STRANGER} (node "
    )


def test_ctrl_c_during_ray_start_up_is_interrupted(site: Site) -> None:
    one_host(site)
    p = site.spawn()
    run_gcs(ADDRESS["node1"])  # the head is up: the run is inside its Ray bring-up
    os.killpg(p.pid, signal.SIGINT)  # the terminal's Ctrl-C: the whole foreground group
    output, _ = p.communicate(timeout=120)
    assert p.returncode == 130, output
    assert "validate: INTERRUPTED — interrupted (Ctrl-C) during ray-up" in output
    assert "teardown: node1 stopped" in output and ours() == []


def test_a_sigint_that_some_code_swallows_still_ends_the_run_interrupted(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Python drops a KeyboardInterrupt raised inside a finalizer, and a library may catch it: the
    # SIGINT must count anyway. Planted here: the bring-up's last check swallows it.
    from patchctl.validate import guard

    judge, inside = guard.judge, threading.Event()

    def swallowing(*args: object, **kw: object) -> object:
        inside.set()
        with contextlib.suppress(KeyboardInterrupt):
            time.sleep(5)
        return judge(*args, **kw)

    monkeypatch.setattr(guard, "judge", swallowing)
    one_host(site)
    threading.Thread(target=lambda: inside.wait(120) and os.kill(os.getpid(), signal.SIGINT), daemon=True).start()
    code, doc, _ = site.run_json()
    assert code == 130 and doc["verdict"] == "interrupted" and doc["stage"] == "ray-up", doc["cause"]
    assert doc["trained"] is None and [t["status"] for t in doc["teardown"]] == ["stopped"]


def test_ray_client_asked_where_ray_has_no_client_is_one_line_before_ray_starts(site: Site) -> None:
    pytest.importorskip("ray")
    from ray._private.utils import get_ray_client_dependency_error

    if get_ray_client_dependency_error() is None:
        pytest.skip("this Ray has its client: --ray-client starts it")  # the venv's Ray has none
    one_host(site)
    code, doc, _ = site.run_json("--ray-client")
    assert code == 1 and doc["stage"] == "ray-up" and doc["host"] == "node1", doc["cause"]
    assert "--ray-client: Ray's client server needs ray[client] on this host" in doc["cause"]
    assert not statedir.session_dirs(f"{doc['run_id']}.0")
