"""Issue 22 without hosts: the stack table's verdicts, busbw judged against the public figures and
peers, the storage checksum against a tampered file, the config keys, ``--checks`` and the plan."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from patchctl.cli.main import cli
from patchctl.clusters import load_cluster
from patchctl.errors import ManifestError
from patchctl.validate.checks import busbw, runner, stack
from patchctl.validate.checks.settings import Settings
from patchctl.validate.errors import StackMismatch
from patchctl.validate.host import stack as host_stack
from patchctl.validate.host import storage as host_storage
from patchctl.validate.model import CheckRow, HostPreflight

BASE = {
    "python": "3.11.7",
    "torch": "2.8.0",
    "torch_cuda": "12.8",
    "nccl": "2.27.3",
    "driver": "570.86.15",
    "ray": "2.60.0",
    "vllm": "0.11.0",
    "flash_attn": None,
    "gpu": "NVIDIA H100 80GB HBM3",
    "verl_commit": "abc",
}


def host(label: str, gpus: int = 8, **diff: Any) -> HostPreflight:
    return HostPreflight(
        label, (CheckRow("patches", "pass", "uky: 18 present"),), "10.0.0.1", gpus, None, 0.1, {**BASE, **diff}
    )


def test_stack_table_lists_every_host_and_passes_when_they_agree() -> None:
    t = stack.check((host("a"), host("b")))
    assert t.hosts == ("a", "b") and t.rows["ray"] == ("2.60.0", "2.60.0") and t.rows["flash_attn"] == ("-", "-")
    assert t.rows["patches"] == ("pass: uky: 18 present",) * 2 and not t.mismatches and not t.warnings


@pytest.mark.parametrize(
    ("diff", "line"),
    [
        ({"ray": "2.49.2"}, "Ray differs: 2.60.0 on a, b; 2.49.2 on c"),
        ({"python": "3.11.9"}, "Python differs: 3.11.7 on a, b; 3.11.9 on c"),
        ({"nccl": "3.0.1"}, "NCCL differs: 2.27.3 on a, b; 3.0.1 on c"),
    ],
)
def test_a_mismatch_ray_or_nccl_cannot_survive_stops_naming_the_hosts(diff: dict[str, str], line: str) -> None:
    with pytest.raises(StackMismatch) as caught:
        stack.check((host("a"), host("b"), host("c", **diff)))
    assert str(caught.value).startswith(line + ": Ray or NCCL cannot run across these hosts")
    assert caught.value.table.rows  # the table is still there to show


def test_other_differences_only_warn() -> None:
    t = stack.check((host("a"), host("b", torch="2.7.1", nccl="2.21.5", driver="550.1")))
    assert not t.mismatches
    assert t.warnings == (
        "torch differs: 2.8.0 on a; 2.7.1 on b",
        "NCCL differs: 2.27.3 on a; 2.21.5 on b",
        "driver differs: 570.86.15 on a; 550.1 on b",
    )
    # Python's patch level only matters where Ray was not told to compare major.minor
    assert not stack.check((host("a"), host("b", python="3.11.9")), relaxed_python=True).mismatches


def test_compare_puts_the_table_beside_an_earlier_runs(tmp_path: Path) -> None:
    old = stack.table((host("x", ray="2.49.2"),))
    run = tmp_path / "old-run"
    run.mkdir()
    (run / "validate.json").write_text(
        json.dumps({"health": {"stack": {"rows": {k: list(v) for k, v in old.rows.items()}}}})
    )
    loaded = runner.earlier_stack(run)
    assert loaded is not None
    t = stack.compare(stack.table((host("a"), host("b"))), loaded)
    assert t.compared["ray"] == ("2.60.0", "2.49.2") and t.compared["torch"] == ("2.8.0", "2.8.0")


def group(kind: str, label: str, n: int, gbps: float) -> dict[str, Any]:
    size = {"bytes": 256 << 20, "seconds": 0.001, "algbw": gbps * n / (2 * (n - 1)), "busbw": gbps}
    return {"kind": kind, "label": label, "n": n, "busbw": gbps, "sizes": [size], "correct": True}


NV = {"topology": "NV18", "env": {"NCCL_NVLS_ENABLE": "0"}, "nics": []}


@pytest.mark.parametrize(("gbps", "status"), [(360.0, "pass"), (200.0, "warn"), (120.0, "fail")])
def test_a_node_is_judged_against_the_public_8_gpu_nvlink_figure(gbps: float, status: str) -> None:
    r = busbw.judge("nccl", [group("node", "0", 8, gbps)], {"a": NV}, (host("a"),), Settings(), 3.0)
    (g,) = r.groups
    assert (g.expected, g.status) == (370.0, status)
    assert "8 x GPU NVLink all-reduce" in g.source and "NVLS off" in g.source


def test_a_node_with_p2p_disabled_is_named_with_that_cause() -> None:
    info = {"a": {**NV, "env": {"NCCL_NVLS_ENABLE": "0", "NCCL_P2P_DISABLE": "1"}}}
    r = busbw.judge("nccl", [group("node", "0", 8, 40.0)], info, (host("a"),), Settings(), 3.0)
    assert r.findings == (
        "fail: all-reduce within node a: 40 GB/s busbw, below 40% of the expected 370 GB/s; "
        "likely cause: a: P2P disabled (NCCL_P2P_DISABLE=1); a: NVLink multicast off "
        "(NCCL_NVLS_ENABLE=0; expected figures assume it off)",
    )


def test_a_pair_below_the_infiniband_figure_names_the_interface_and_the_port_down() -> None:
    ib = {
        "env": {"NCCL_SOCKET_IFNAME": "eth0"},
        "topology": "NV18",
        "nics": [
            {"name": "mlx5_0/1", "rate": "400 Gb/sec (4X NDR)", "state": "4: ACTIVE"},
            {"name": "mlx5_1/1", "rate": "400 Gb/sec (4X NDR)", "state": "1: DOWN"},
        ],
    }
    raw = [group("pair", "0-1", 16, 10.0)]
    r = busbw.judge("nccl", raw, {"a": ib, "b": ib}, (host("a"), host("b")), Settings(), 3.0)
    (g,) = r.groups
    assert g.expected == 47.0 and g.status == "fail" and g.hosts == ("a", "b")
    assert "between a and b" in r.findings[0] and "a: interface eth0" in r.findings[0]
    assert "InfiniBand port(s) not active: mlx5_1/1" in r.findings[0]
    hdr = {**ib, "nics": [*ib["nics"], {"name": "mlx5_2/1", "rate": "200 Gb/sec (4X HDR)", "state": "4: ACTIVE"}]}
    r = busbw.judge("nccl", raw, {"a": ib, "b": hdr}, (host("a"), host("b")), Settings(), 3.0)
    assert "b: InfiniBand ports at 200 Gb/sec (4X HDR), 400 Gb/sec (4X NDR)" in r.findings[0]
    assert "a: InfiniBand ports at" not in r.findings[0]


def test_the_node_all_slow_pairs_share_is_named() -> None:
    raw = [
        group("pair", "0-1", 2, 1.0),
        group("pair", "0-2", 2, 0.01),
        group("pair", "1-2", 2, 0.012),
        group("cluster", "all", 3, 0.01),
    ]
    r = busbw.judge("gloo", raw, {}, (host("a", 0), host("b", 0), host("c", 0)), Settings(), 3.0)
    assert [g.status for g in r.groups] == ["pass", "fail", "fail", "pass"]
    assert r.findings[0].startswith("node c is slow: every pair with it is (a <-> c 0.01, b <-> c 0.012 GB/s)")
    assert len(r.findings) == 1  # its pairs are not listed again


def test_wrong_sums_fail_whatever_the_speed() -> None:
    raw = [{**group("node", "0", 8, 400.0), "correct": False}]
    (g,) = busbw.judge("nccl", raw, {"a": NV}, (host("a"),), Settings(), 1.0).groups
    assert (g.status, g.note) == ("fail", "the all-reduce returned wrong sums")


def test_storage_catches_data_that_changed_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = host_storage._write

    def write_then_rot(path: str, size: int, deadline: float) -> tuple[int, str, float]:
        done = real(path, size, deadline)
        with open(path, "r+b") as f:  # a flipped byte, as a bad disk or cache would return it
            f.seek(12345)
            byte = f.read(1)
            f.seek(12345)
            f.write(bytes([byte[0] ^ 0xFF]))
        return done

    assert host_storage.measure_one(str(tmp_path), 1 << 20, 60)["checksum_ok"] is True
    monkeypatch.setattr(host_storage, "_write", write_then_rot)
    got = host_storage.measure_one(str(tmp_path), 1 << 20, 60)
    assert got["checksum_ok"] is False and got["bytes"] == 1 << 20
    assert os.listdir(tmp_path / host_storage.SUBDIR) == []  # the probe file is gone either way


def test_storage_refuses_a_marker_folder_that_is_a_link(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / host_storage.SUBDIR).symlink_to(tmp_path / "elsewhere")
    assert "is a link" in host_storage.mark({"data": str(tmp_path / "d")}, "run.0")["data"]
    assert list((tmp_path / "elsewhere").iterdir()) == []
    marked = host_storage.mark({"data": str(tmp_path / "none"), "checkpoint": str(tmp_path / "ckpt")}, "run.0")
    assert marked == {"data": f"{tmp_path / 'none'} does not exist", "checkpoint": ""}  # only the run's own is made


def test_torch_cuda_build_is_read_without_importing(tmp_path: Path) -> None:
    (tmp_path / "version.py").write_text("__version__ = '2.8.0+cu128'\ncuda: Optional[str] = '12.8'\n")
    assert host_stack.torch_cuda(tmp_path) == "12.8"
    (tmp_path / "version.py").write_text("__version__ = '2.8.0+cpu'\ncuda: Optional[str] = None\n")
    assert host_stack.torch_cuda(tmp_path) is None


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ("storage_bytes = -1", "clusters.c.health.storage_bytes': -1 is out of range"),
        ("nope = 1", "clusters.c.health.nope': unknown key"),
        ("busbw_warn_percent = 30", "clusters.c.health.busbw_fail_percent': is above its warn bar"),
        ('checkpoint_dir = "ckpt"', "clusters.c.health.checkpoint_dir': 'ckpt' is not absolute"),
    ],
)
def test_health_keys_are_checked_naming_the_key(tmp_path: Path, table: str, problem: str) -> None:
    cfg = tmp_path / "patchctl.toml"
    cfg.write_text(f'[clusters.c]\nhosts = ["a"]\nroot = "/r"\n[clusters.c.health]\n{table}\n')
    with pytest.raises(ManifestError) as caught:
        load_cluster("c", cfg)
    assert problem in str(caught.value)


def test_checks_option_and_the_health_plan(tmp_path: Path) -> None:
    cfg = tmp_path / "patchctl.toml"
    cfg.write_text('[clusters.c]\nhosts = ["a", "b"]\nroot = "/r"\n')
    done = CliRunner().invoke(cli, ["validate", "c", "--config", str(cfg), "--dry-run", "--checks", "disk"])
    assert done.exit_code == 2 and "no check named disk; use names from: stack, storage, interconnect" in done.output
    done = CliRunner().invoke(cli, ["validate", "c", "--config", str(cfg), "--dry-run", "--profile", "health"])
    assert done.exit_code == 0, done.output
    purposes = [ln[2:] for ln in done.output.splitlines() if ln.startswith("# a:") or ln.startswith("# b:")]
    assert purposes == [
        "a: ship",
        "b: ship",
        "a: preflight",
        "b: preflight",
        "a: storage",
        "b: storage",
        "a: interconnect",
        "b: interconnect",
    ]  # no Ray, no trainer
    assert "# the trainer" not in done.output
    done = CliRunner().invoke(cli, ["validate", "c", "--config", str(cfg), "--dry-run", "--checks", "interconnect"])
    assert "# a: interconnect" in done.output and "# a: ray-head" in done.output and "# a: storage" not in done.output


def test_torch_is_judged_from_what_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from patchctl.preflight import build
    from patchctl.validate.host import found

    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\necho '0, GPU-aaaa, NVIDIA H100 80GB HBM3, 81559, 9.0'\n"
        "echo '1, GPU-bbbb, NVIDIA H100 80GB HBM3, 81559, 9.0'\n"
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    facts = {"torch": "2.8.0", "torch_cuda": "12.8", "driver": "570.86.15", "cuda_api": "12.8", "verl_location": None}

    def torch_row(env: dict[str, str], **diff: Any) -> dict[str, str]:
        ctx = build(None, None, env=env)
        return found.rows(ctx, tmp_path, {**facts, **diff}, ["torch"])["torch"]

    row = torch_row({})
    assert row["status"] == "pass", row
    assert row["value"] == (
        "torch 2.8.0, built for CUDA 12.8; 2 GPUs: 2 x NVIDIA H100 80GB HBM3 (79.6 GiB, sm 9.0); "
        "driver 570.86.15, CUDA 12.8 driver API (found, not imported)"
    )
    assert "1 GPU: NVIDIA H100" in torch_row({"CUDA_VISIBLE_DEVICES": "GPU-bbbb"})["value"]
    assert torch_row({}, torch_cuda=None)["status"] == "fail"  # a CPU-only build cannot train
    assert torch_row({}, cuda_api="12.2")["status"] == "pass"  # CUDA's minor-version compatibility
    assert torch_row({}, cuda_api="11.8")["value"].startswith(
        "torch 2.8.0, built for CUDA 12.8; no GPU usable: the driver supports CUDA up to 11.8"
    )


@pytest.mark.parametrize("nodes", [1, 2, 3, 4, 5, 8])
def test_rounds_cover_every_pair_once_with_disjoint_groups(nodes: int) -> None:
    from patchctl.validate.host.allreduce import rounds

    node_ranks = [[2 * i, 2 * i + 1] for i in range(nodes)]
    schedule = rounds(node_ranks)
    pairs = [label for r in schedule for kind, label, _ in r if kind == "pair"]
    assert sorted(pairs) == sorted(f"{a}-{b}" for a in range(nodes) for b in range(a + 1, nodes))
    for r in schedule:  # the groups of one round run at once: no rank in two of them
        ranks = [x for _, _, members in r for x in members]
        assert len(ranks) == len(set(ranks))
    assert [k for k, _, _ in schedule[0]] == ["node"] * nodes
    assert (schedule[-1][0][0] == "cluster") == (nodes > 2)
    assert len(schedule) == 1 + (nodes - 1 + nodes % 2 if nodes > 1 else 0) + (nodes > 2)


@pytest.mark.parametrize(("gbps", "status"), [(296.0, "pass"), (100.0, "fail")])
def test_two_h200s_on_nvlink_are_judged_against_the_figure_measured_here(gbps: float, status: str) -> None:
    """No config bar: the pair's NV18 link alone sets what it must reach (297 GB/s measured on
    nvidia-h200-x2), so a pair far below it fails."""
    h200 = host("a", gpus=2, gpu="NVIDIA H200")
    r = busbw.judge("nccl", [group("node", "0", 2, gbps)], {"a": NV}, (h200,), Settings(), 3.0)
    (g,) = r.groups
    assert (g.expected, g.status) == (297.0, status)
    assert "nvidia-h200-x2, 2026-11-28" in g.source and "NV18" in g.source
