"""validate proves that a code patch ran in the Ray workers of every node, not only in the driver:
the raylets a node supervisor starts hand the code hook to their workers (train/codehook.py)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from validate_helpers import HERE, Site, host_entry

from patchctl.cli.main import cli

PATCHSET = """[patchset]
name = "mark"
tag = "Mark"

[[patch]]
id = "mark-prelude"
title = "A marker block in the module the stand-in's Ray task imports"
why = "test: the block must be seen running in a Ray worker of each node"
kind = "prelude"
target = ["verl/utils/standin_mark.py"]

[patch.params]
block = \'\'\'
MARKED = True  # Mark\'\'\'

[patch.upstream]
kind = "none"
"""


def _patched(site: Site) -> None:
    ps = site.dir / "mark-ps"
    ps.mkdir()
    (ps / "patchset.toml").write_text(PATCHSET)
    done = CliRunner().invoke(cli, ["apply", "--target", str(site.tree), "--patchset", str(ps), "--commit"])
    assert done.exit_code == 0 and "applied" in done.output and "not-applicable" not in done.output, done.output


def test_the_patched_module_is_seen_in_the_ray_workers_of_every_node(site: Site) -> None:
    _patched(site)
    cluster = site.cluster([host_entry("node1", site.root("node1"), "0"), *site.hosts({"node2": "1"}, gpus=1)])
    site.migrate(cluster)
    out = site.dir / "run"
    done = site.validate("--out", str(out), "--ray-timeout", "60", "--ray-cpus", "1")
    assert done.exit_code == 0, done.output
    report = json.loads((out / "report.json").read_text())
    gate = {g["name"]: g for g in report["gates"]}["patched-code-ran"]
    assert gate["status"] == "pass", (gate["reason"], report["patched_code"])
    (patch,) = report["patched_code"]["patches"]
    assert patch["patch"] == "mark-prelude" and patch["on_path"] and not patch["from_elsewhere"]
    # the head's own Ray worker ran the patched module from its tree; without the hook in the
    # raylet's environment only the driver (which never imports it) would have recorded anything
    roles = {p["role"] for p in patch["from_tree"]}
    assert any(r.startswith("ray::") for r in roles), roles
    assert report["patched_code"]["verl_from"] == [str(site.root("node1") / "verl" / "__init__.py")]


def _hosts(report: dict) -> dict[str, dict]:
    return {h["host"]: h for h in report["patched_code"]["hosts"]}


def test_every_node_s_processes_are_judged_and_import_their_own_tree(site: Site) -> None:
    """Per-host roots that differ: node2's Ray worker must import node2's tree (Ray puts the
    driver's working directory first on every worker's sys.path), and its records come home."""
    _patched(site)
    cluster = site.cluster([host_entry("node1", site.root("node1"), "0"), *site.hosts({"node2": "1"}, gpus=1)])
    site.migrate(cluster)
    code, doc, out = site.run_json("--ray-timeout", "60")
    assert code == 0, out
    report = json.loads((site.dir / "run" / "report.json").read_text())
    hosts = _hosts(report)
    assert sorted(hosts) == ["node1", "node2"]
    for label in ("node1", "node2"):
        root = str(site.root(label).resolve())
        marked = [p for p in hosts[label]["processes"] if "verl.utils.standin_mark" in p["imports"]]
        assert marked, (label, hosts[label])
        for p in marked:
            imp = p["imports"]["verl.utils.standin_mark"]
            assert imp["file"].startswith(root + "/") and imp["own_tree"] and imp["as_migrated"], (label, p)
    # the records were brought home, per host
    assert list((site.dir / "run" / "codehook" / "node2").glob("*.jsonl"))
    gate = {g["name"]: g for g in doc["trained"]["gates"]}["patched-code-ran"]
    assert gate["status"] == "pass" and "on 2 hosts" in gate["reason"], gate


def test_a_worker_node_whose_tree_was_reverted_after_migrate_fails(site: Site) -> None:
    """node2's patched file put back to upstream's after migrate, at the very path of the good one:
    only its sha256 tells, and the run fails naming node2."""
    _patched(site)
    cluster = site.cluster([host_entry("node1", site.root("node1"), "0"), *site.hosts({"node2": "1"}, gpus=1)])
    site.migrate(cluster)
    mark = site.root("node2") / "verl" / "utils" / "standin_mark.py"
    upstream = (HERE / "standin" / "verl" / "utils" / "standin_mark.py").read_text()
    assert mark.read_text() != upstream
    mark.write_text(upstream)
    code, doc, out = site.run_json("--ray-timeout", "60")
    assert code == 1 and doc["trained"], out
    gate = {g["name"]: g for g in doc["trained"]["gates"]}["patched-code-ran"]
    assert gate["status"] == "fail", gate
    assert gate["reason"].startswith("node2: ") and "changed after migrate" in gate["reason"], gate
    assert doc["verdict"] == "fail" and doc["host"] == "node2" and "patched-code-ran" in doc["cause"], doc["cause"]
    report = json.loads((site.dir / "run" / "report.json").read_text())
    assert report["verdict"] == "fail"
    bad = [p for p in _hosts(report)["node2"]["processes"] if "verl.utils.standin_mark" in p["imports"]]
    assert bad and not any(p["imports"]["verl.utils.standin_mark"]["as_migrated"] for p in bad)


def _two_nodes_patched(site: Site) -> None:
    _patched(site)
    cluster = site.cluster([host_entry("node1", site.root("node1"), "0"), *site.hosts({"node2": "1"}, gpus=1)])
    site.migrate(cluster)


def test_weights_match_passes_when_the_engine_on_another_node_holds_the_trainer_s_weights(site: Site) -> None:
    """The stand-in's torch-free weight sync: the trainer (driver, node1) sends 4 syncs to an engine
    actor on node2; the code hook fingerprints both sides and validate brings node2's records home."""
    _two_nodes_patched(site)
    code, doc, out = site.run_json("--ray-timeout", "60", "+standin.weights=healthy")
    assert code == 0, out
    gate = {g["name"]: g for g in doc["trained"]["gates"]}["weights-match"]
    assert gate["status"] == "pass" and gate["reason"].startswith("4 syncs x 13 parameters on 1 engine"), gate
    report = json.loads((site.dir / "run" / "report.json").read_text())
    assert report["weights_match"]["engine"]["syncs"] == 4 and report["weights_match"]["trainer"]["parameters"] == 13


@pytest.mark.parametrize(
    ("mode", "first"),
    [
        # half of each bucket never loaded: the engine keeps its initial (zero) weights there
        (
            "partial",
            "differ on 4 of 4 syncs (syncs 1, 2, 3, 4); first: sync 1, "
            "model.layers.0.mlp.gate_proj.weight: engine sum 0",
        ),
        # the engine loads on odd syncs only: sync 2 still holds sync 1's weights
        ("some", "differ on 2 of 4 syncs (syncs 2, 4); first: sync 2"),
        # layer 0's names loaded into layer 1 and back: every layer parameter is another's
        ("names", "first: sync 1, model.layers.0."),
    ],
)
def test_weights_match_fails_each_sabotaged_sync_naming_the_first_sync_and_parameter(
    site: Site, mode: str, first: str
) -> None:
    _two_nodes_patched(site)
    code, doc, out = site.run_json("--ray-timeout", "60", f"+standin.weights={mode}")
    assert code == 1, out
    gates = {g["name"]: g for g in doc["trained"]["gates"]}
    gate = gates["weights-match"]
    assert gate["status"] == "fail" and first in gate["reason"], gate
    # nothing else notices: the run is otherwise healthy (the sabotage touches the weights alone)
    assert [g for g, v in gates.items() if v["status"] == "fail"] == ["weights-match"], gates
