"""Issue 22 on the loopback hosts: ``validate --profile health`` measures gloo all-reduce busbw
within, between and across three real hosts (sshd at 127.0.0.2-4), storage on every host's
tree, data and checkpoint directory (the shared data directory measured once), and puts the
stack side by side; a host whose link is slow (the stand-in that sleeps in its ranks'
timed loop, since ``tc`` on the shared loopback would slow every test) is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from validate_helpers import Site, host_entry, ours

from patchctl.validate.host.allreduce import SLOW_ENV

SMALL = (
    "[clusters.loop.health]\nstorage_bytes = 4194304\nstorage_warn_mbps = 1\nstorage_fail_mbps = 1\n"
    "allreduce_min_bytes = 16384\nallreduce_max_bytes = 262144\nallreduce_warmup = 1\nallreduce_iters = 8\n"
    "peer_percent = 3\n"
)  # loopback timings jitter 10x on a busy machine; the slow host (0.1 s per iteration) is 100x off


@pytest.fixture
def torch_here() -> None:
    try:
        import torch.distributed  # noqa: F401 - only whether it imports
    except ImportError:  # not in the test extra: see docs/validation/health/README.md
        pytest.skip("the interconnect check needs torch on the hosts (pip install torch)")


def health(site: Site, slow: str | None, extra: str = "", *args: str) -> tuple[int, str, dict]:
    hosts = [
        host_entry(a, site.root(a), None, gpus=0, env={SLOW_ENV: slow} if slow and a == "node3" else {})
        for a in ("node1", "node2", "node3")
    ]
    site.migrate(site.cluster(hosts, extra=SMALL + extra))  # migrate renders paths from the uky example only
    site.config(hosts, extra=f'[clusters.loop.paths]\nDATA_DIR = "{site.dir / "data"}"\n' + SMALL + extra)
    out = site.dir / "run"
    done = site.validate("--profile", "health", "--out", str(out), *args)
    assert ours() == []
    return done.exit_code, done.output, json.loads((out / "validate.json").read_text())


def test_health_measures_every_group_and_storage_once_per_shared_dir(site: Site, torch_here: None) -> None:
    (site.dir / "data").mkdir()
    code, output, doc = health(site, None)
    assert code == 0, output
    assert doc["verdict"] == "pass" and doc["ray"] is None and doc["trained"] is None
    ic = doc["health"]["interconnect"]
    assert ic["backend"] == "gloo"
    groups = [(g["kind"], tuple(g["hosts"])) for g in ic["groups"]]
    assert groups == [
        ("pair", ("node1", "node2")),
        ("pair", ("node1", "node3")),
        ("pair", ("node2", "node3")),
        ("cluster", ("node1", "node2", "node3")),
    ]
    for g in ic["groups"]:
        assert [s["bytes"] for s in g["sizes"]] == [16384, 65536, 262144] and g["busbw"] > 0
        # busbw = algbw x 2(n-1)/n, nccl-tests' definition
        assert g["sizes"][-1]["busbw"] == pytest.approx(
            g["sizes"][-1]["algbw"] * 2 * (g["ranks"] - 1) / g["ranks"], rel=1e-2
        )
    rows = {(r["host"], r["dir"]): r for r in doc["health"]["storage"]}
    assert {r["status"] for (h, d), r in rows.items() if d == "tree"} == {"pass"}  # each host its own tree
    data = [rows[(h, "data")]["status"] for h in ("node1", "node2", "node3")]
    assert data == ["pass", "shared", "shared"], data  # one path on one machine: the same directory
    assert rows[("node1", "data")]["shared_with"] == ["node1", "node2", "node3"]
    assert rows[("node1", "tree")]["bytes"] == 4194304 and "python" in rows[("node1", "tree")]["method"]
    assert not list((site.dir / "data").glob(".patchctl-health*")), "the markers and probe file were left"
    stack = doc["health"]["stack"]
    assert stack["hosts"] == ["node1", "node2", "node3"] and stack["mismatches"] == []
    assert len(set(stack["rows"]["ray"])) == 1 and stack["rows"]["ray"][0] != "-"
    assert "all-reduce busbw, gloo" in output and "stack (found, not imported)" in output
    # --compare with that run: the stack side by side (stack alone: nothing is measured again)
    again = site.validate(
        "--profile", "health", "--checks", "stack", "--out", str(site.dir / "r2"), "--compare", str(site.dir / "run")
    )
    assert again.exit_code == 0, again.output
    assert "stack vs the earlier run" in again.output and "all-reduce busbw" not in again.output
    compared = json.loads((site.dir / "r2" / "validate.json").read_text())["health"]["stack"]["compared"]
    assert compared["ray"][0] == compared["ray"][1] == stack["rows"]["ray"][0]


def test_a_ray_that_differs_on_one_host_stops_the_run_naming_it(site: Site) -> None:
    fake = site.dir / "fake-site"  # a Ray 2.61.0 found first on node3's path: its metadata, as pip leaves it
    (fake / "ray-2.61.0.dist-info").mkdir(parents=True)
    (fake / "ray-2.61.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: ray\nVersion: 2.61.0\n")
    hosts = [
        host_entry(a, site.root(a), None, gpus=0, env={"PYTHONPATH": str(fake)} if a == "node3" else {})
        for a in ("node1", "node2", "node3")
    ]
    site.migrate(site.cluster(hosts))
    done = site.validate("--profile", "health", "--checks", "stack", "--out", str(site.dir / "run"))
    assert done.exit_code == 1, done.output
    assert done.output.strip().splitlines()[-1] == (
        "validate: FAIL — Ray differs: 2.60.0 on node1, node2; 2.61.0 on node3: Ray or NCCL cannot run across "
        "these hosts; install the same versions everywhere (the stack table lists each host's)"
    )
    assert "MISMATCH: Ray differs" in done.output
    assert json.loads((site.dir / "run" / "validate.json").read_text())["host"] == "node3"


def test_a_slow_host_is_named_with_its_likely_cause(site: Site, torch_here: None) -> None:
    (site.dir / "data").mkdir()
    code, output, doc = health(site, "0.1")
    assert code == 1, output
    assert doc["verdict"] == "fail" and doc["host"] == "node3" and doc["stage"] == "interconnect"
    assert "node node3 is slow: every pair with it is" in doc["cause"]
    assert f"{SLOW_ENV}=0.1" in doc["cause"]
    status = {tuple(g["hosts"]): g["status"] for g in doc["health"]["interconnect"]["groups"]}
    assert status[("node1", "node2")] == "pass"
    assert status[("node1", "node3")] == status[("node2", "node3")] == "fail"
    assert "validate: FAIL" in output and "node3" in output.splitlines()[-1]


def test_storage_below_its_fail_bar_stops_the_run_naming_host_and_dir(site: Site) -> None:
    (site.dir / "data").mkdir()
    code, output, _ = health(site, None, "", "--checks", "storage")
    assert code == 0, output
    # the same run, with a fail bar no disk reaches
    bar = SMALL.replace(
        "storage_warn_mbps = 1\nstorage_fail_mbps = 1", "storage_warn_mbps = 999999999\nstorage_fail_mbps = 999999999"
    )
    site.config(
        [host_entry(a, site.root(a), None, gpus=0) for a in ("node1", "node2", "node3")],
        extra=f'[clusters.loop.paths]\nDATA_DIR = "{site.dir / "data"}"\n' + bar,
    )
    done = site.validate("--profile", "health", "--checks", "storage", "--out", str(site.dir / "r2"))
    assert done.exit_code == 1, done.output
    last = done.output.strip().splitlines()[-1]
    assert last.startswith("validate: FAIL — node1: storage check failed: tree directory "), last
    assert "below 999999999 MB/s" in last
    assert json.loads(Path(site.dir / "r2" / "validate.json").read_text())["health"]["interconnect"] is None


def test_hosts_without_torch_fail_the_interconnect_in_one_line(site: Site) -> None:
    shadow = site.dir / "no-torch"  # first on the hosts' path: `import torch` fails there as if absent
    (shadow / "torch").mkdir(parents=True)
    (shadow / "torch" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n"
    )
    hosts = [host_entry(a, site.root(a), None, gpus=0, env={"PYTHONPATH": str(shadow)}) for a in ("node1", "node2")]
    site.migrate(site.cluster(hosts, extra=SMALL))
    done = site.validate("--profile", "health", "--checks", "interconnect", "--out", str(site.dir / "run"))
    assert done.exit_code == 1, done.output
    last = done.output.strip().splitlines()[-1]
    assert last.startswith(
        "validate: FAIL — node1: interconnect check failed: ModuleNotFoundError: No module named "
        "'torch'; install torch in "
    ), last
    assert ours() == []


def test_health_starts_no_ray_so_an_old_ray_is_not_refused(site: Site) -> None:
    """Issue 41 req 9: the Ray >= 2.52 rule guards the token of a Ray validate starts; health starts none."""
    old = site.dir / "old-ray"  # Ray 2.49.2 found first on every host's path: its metadata, as pip leaves it
    (old / "ray-2.49.2.dist-info").mkdir(parents=True)
    (old / "ray-2.49.2.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: ray\nVersion: 2.49.2\n")
    hosts = [host_entry(a, site.root(a), None, gpus=0, env={"PYTHONPATH": str(old)}) for a in ("node1", "node2")]
    site.migrate(site.cluster(hosts))
    done = site.validate("--profile", "health", "--checks", "stack", "--out", str(site.dir / "run"))
    assert done.exit_code == 0, done.output
    doc = json.loads((site.dir / "run" / "validate.json").read_text())
    for host in doc["preflight"]:
        rows = {r["check"]: r for r in host["rows"]}
        assert rows["ray_auth"]["status"] == rows["ray_listen"]["status"] == "skip"
        assert rows["ray_auth"]["value"] == "left out (profile health starts no Ray)"
    assert doc["health"]["stack"]["rows"]["ray"] == ["2.49.2", "2.49.2"]  # still shown side by side
