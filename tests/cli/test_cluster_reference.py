"""One reference for the cluster config (#19): every key the schema accepts is described for
``--help``, in the README's table and in docs/patchctl.toml, and that example loads. A key added
to the schema without its documentation fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchctl import config
from patchctl.cli.cluster_keys import CLUSTER_KEYS, HOST_KEYS, SLURM_KEYS
from patchctl.cli.main import cli
from patchctl.clusters import CLUSTER_SCHEMA, HOST_SCHEMA, load_clusters
from patchctl.slurm.settings import SLURM_SCHEMA

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "patchctl.toml"


def readme_table() -> dict[str, set[str]]:
    """``key -> {"cluster", "host"}`` from the README's reference table."""
    text = (ROOT / "README.md").read_text()
    section = text.split("### Every key of the cluster config", 1)[1].split("\n### ", 1)[0]
    return {
        m[1]: {w.strip() for w in m[2].split(",")} for m in re.finditer(r"^\| `(\w+)` \| ([a-z, ]+) \|", section, re.M)
    }


def test_every_key_is_described_for_help() -> None:
    assert set(CLUSTER_KEYS) == set(CLUSTER_SCHEMA)
    assert set(HOST_KEYS) == set(HOST_SCHEMA)
    assert set(SLURM_KEYS) == set(SLURM_SCHEMA)


def test_every_key_is_in_the_readme_at_its_level() -> None:
    table = readme_table()
    assert {k for k, where in table.items() if "cluster" in where} == set(CLUSTER_SCHEMA)
    assert {k for k, where in table.items() if "host" in where} == set(HOST_SCHEMA)
    assert {k for k, where in table.items() if "slurm" in where} == set(SLURM_SCHEMA)


@pytest.mark.parametrize("command", [["migrate"], ["validate"], ["verify"]])
def test_every_key_is_in_help(command: list[str]) -> None:
    out = CliRunner().invoke(cli, [*command, "--help"]).output
    keys = out.split("Cluster config:", 1)[1]
    cluster_part, host_part = keys.split("A host written as a table", 1)
    host_part, slurm_part = host_part.split("A Slurm cluster", 1)
    assert set(re.findall(r"^    (\w+) ", slurm_part, re.M)) == set(SLURM_SCHEMA)
    assert set(re.findall(r"^    (\w+) ", cluster_part, re.M)) == set(CLUSTER_SCHEMA)
    assert set(re.findall(r"^    (\w+) ", host_part, re.M)) == set(HOST_SCHEMA)
    assert max(len(line) for line in keys.splitlines()) <= 80


def test_the_example_loads_with_every_key() -> None:
    loaded = config.load(EXAMPLE)
    assert loaded.targets == {"mine": str(Path("~/verl_Uky").expanduser()), "old": "verl==0.6.1"}
    gpu = load_clusters(EXAMPLE)["gpu"]
    assert [h.ssh for h in gpu.hosts] == ["node1", "user@10.0.0.12", "gpu3"]
    assert gpu.hosts[2].address == "10.0.0.13" and gpu.hosts[2].gpus == 4 and gpu.hosts[2].ifname == "ib0"
    assert gpu.hosts[0].gpus == 8 and gpu.hosts[0].ray_port == 6379 and gpu.preflight_skip == ("vllm",)
    hpc = load_clusters(EXAMPLE)["hpc"]
    assert hpc.slurm is not None and hpc.slurm.nodes == 2 and hpc.hosts[0].ssh == "me@login1.hpc.example.org"
    assert set(SLURM_SCHEMA) - set(loaded.clusters["hpc"]) == {"gres"}  # gres instead of gpus_per_node
    raw = loaded.clusters["gpu"]
    assert set(raw) == set(CLUSTER_SCHEMA)
    assert set().union(*(h for h in raw["hosts"] if isinstance(h, dict))) == set(HOST_SCHEMA)
