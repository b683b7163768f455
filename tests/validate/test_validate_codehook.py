"""validate proves that a code patch ran in the Ray workers of every node, not only in the driver:
the raylets a node supervisor starts hand the code hook to their workers (train/codehook.py)."""

from __future__ import annotations

import json

from click.testing import CliRunner
from validate_helpers import Site, host_entry

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
