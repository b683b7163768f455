"""How validate judges measured all-reduce busbw: which figure applies, which bar and which pair decide.

Issue 41's second audit planted one-line bugs in validate/checks/busbw.py and expected.py that the
health tests let pass: the wrong GPU's figure, a figure for a node of 4 GPUs, the bars moved by
one step, the config's figures ignored, a slow node named when every pair is slow. Each test here
asserts what a user reads in the interconnect table or its findings.
"""

from __future__ import annotations

from typing import Any

import pytest

from patchctl.validate.checks import busbw, expected
from patchctl.validate.checks.settings import Settings
from patchctl.validate.model import CheckRow, HostPreflight

H100 = "NVIDIA H100 80GB HBM3"
NV = {"topology": "NV18", "env": {"NCCL_NVLS_ENABLE": "0"}, "nics": []}
NDR = {"name": "mlx5_0/1", "rate": "400 Gb/sec (4X NDR)", "state": "4: ACTIVE"}


def host(label: str, gpus: int = 8, gpu: str = H100) -> HostPreflight:
    return HostPreflight(label, (CheckRow("patches", "pass", ""),), "10.0.0.1", gpus, None, 0.1, {"gpu": gpu})


def group(kind: str, label: str, n: int, gbps: float, **extra: Any) -> dict[str, Any]:
    size = {"bytes": 256 << 20, "seconds": 0.001, "algbw": gbps * n / (2 * (n - 1)) if n > 1 else gbps, "busbw": gbps}
    return {"kind": kind, "label": label, "n": n, "busbw": gbps, "sizes": [size], "correct": True, **extra}


def one_node(gbps: float, s: Settings | None = None, gpu: str = H100, info: dict[str, Any] = NV) -> busbw.Group:
    (g,) = busbw.judge(
        "nccl", [group("node", "0", 8, gbps)], {"a": info}, (host("a", gpu=gpu),), s or Settings(), 1.0
    ).groups
    return g


# -- expected.py: which public figure a node or pair is held to ----------------------------------


@pytest.mark.parametrize(("gpu", "figure"), [(H100, 370.0), ("NVIDIA A100-SXM4-80GB", 240.0), ("Tesla V100", None)])
def test_each_gpu_is_held_to_its_own_nvlink_figure(gpu: str, figure: float | None) -> None:
    """An A100 node is not judged by H100's 370 GB/s; a GPU with no public figure gets none."""
    g = one_node(200.0, gpu=gpu)
    assert g.expected == figure
    assert g.status == ("pass" if figure is None else "warn" if figure == 370.0 else "pass")


def test_a_node_of_other_than_8_gpus_gets_no_figure() -> None:
    """The public figures are 8-GPU all-reduces: 4 GPUs at 100 GB/s is not 'below 40% of 370'."""
    (g,) = busbw.judge("nccl", [group("node", "0", 4, 100.0)], {"a": NV}, (host("a", 4),), Settings(), 1.0).groups
    assert (g.expected, g.status) == (None, "pass")
    assert g.source == f"no figure: 4 x {H100} over NV18 (figures exist for 2 GPUs on one NV# and 8 GPUs)"
    assert expected.intra(H100, 4, "NV18", False) is None


def test_an_h100_pcie_node_without_nvlink_is_held_to_the_pcie_figure() -> None:
    pcie = {**NV, "topology": "PIX, PXB, SYS"}
    g = one_node(20.0, gpu="NVIDIA H100 PCIe", info=pcie)
    assert (g.expected, g.status) == (40.0, "warn")
    assert "PCIe without NVLink" in g.source
    # a topology nothing was read of is not 'no NVLink': no figure then
    assert one_node(30.0, gpu="NVIDIA H100 PCIe", info={**NV, "topology": ""}).expected is None


def test_a_pair_without_infiniband_ndr_gets_no_figure() -> None:
    """Over Ethernet (no active NDR port) no public figure applies: no 'expected 0 GB/s' either."""
    raw = [group("pair", "0-1", 16, 5.0)]
    (g,) = busbw.judge("nccl", raw, {"a": NV, "b": NV}, (host("a"), host("b")), Settings(), 1.0).groups
    assert (g.expected, g.status) == (None, "pass")
    assert g.source == "no figure: no active RDMA port (InfiniBand/RoCE), NCCL over TCP sockets"
    ib = {**NV, "nics": [NDR, {**NDR, "name": "mlx5_1/1"}]}
    (g,) = busbw.judge("nccl", raw, {"a": ib, "b": ib}, (host("a"), host("b")), Settings(), 1.0).groups
    assert g.expected == 94.0 and g.source.startswith("2 x 400 Gb/s InfiniBand port(s)")


# -- busbw.py: the bars, the config's figures, the notes ------------------------------------------


def test_the_configured_figures_replace_the_public_ones() -> None:
    s = Settings(expected_intra_gbps=100, expected_inter_gbps=10)
    g = one_node(50.0, s)
    assert (g.expected, g.source, g.status) == (100.0, "clusters.NAME.health.expected_intra_gbps", "warn")
    ib = {**NV, "nics": [NDR]}
    raw = [group("pair", "0-1", 16, 30.0)]
    (p,) = busbw.judge("nccl", raw, {"a": ib, "b": ib}, (host("a"), host("b")), s, 1.0).groups
    assert (p.expected, p.source, p.status) == (10.0, "clusters.NAME.health.expected_inter_gbps", "pass")


@pytest.mark.parametrize(
    ("gbps", "status"),
    # 370 GB/s: the fail bar is 40% = 148, the warn bar 70% = 259; a figure on a bar is not below it
    [(147.9, "fail"), (148.0, "warn"), (258.9, "warn"), (259.0, "pass")],
)
def test_the_bars_sit_exactly_at_their_percentages(gbps: float, status: str) -> None:
    assert one_node(gbps).status == status


def test_one_rank_notes_its_algbw_at_the_largest_size() -> None:
    sizes = [{"bytes": b, "seconds": 0.001, "algbw": a, "busbw": 0.0} for b, a in ((1 << 20, 1.5), (4 << 20, 2.5))]
    raw = [{"kind": "node", "label": "0", "n": 1, "busbw": 0.0, "sizes": sizes, "correct": True}]
    (g,) = busbw.judge("gloo", raw, {}, (host("a", 0),), Settings(), 1.0).groups
    assert g.note == "1 rank: busbw is 0 by nccl-tests' definition; algbw 2.5 GB/s"
    (g,) = busbw.judge("gloo", [group("node", "0", 2, 1.0)], {}, (host("a", 0),), Settings(), 1.0).groups
    assert g.note == ""  # two ranks have a busbw of their own


def test_a_sweep_cut_short_says_so() -> None:
    raw = [group("node", "0", 8, 100.0, stopped_early=True)]
    (g,) = busbw.judge("nccl", raw, {"a": NV}, (host("a"),), Settings(), 1.0).groups
    assert g.note == "below 40% of the expected 370 GB/s; sweep stopped early (interconnect_seconds)"


def test_the_time_taken_is_kept_to_the_hundredth() -> None:
    assert busbw.judge("gloo", [], {}, (host("a", 0),), Settings(), 3.14159).seconds == 3.14


def test_the_table_lists_nodes_then_pairs_then_the_cluster() -> None:
    raw = [
        group("cluster", "all", 3, 1.0),
        group("pair", "0-1", 2, 1.0),
        group("node", "2", 1, 0.0),
        group("node", "0", 1, 0.0),
    ]
    r = busbw.judge("gloo", raw, {}, (host("a", 0), host("b", 0), host("c", 0)), Settings(), 1.0)
    assert [(g.kind, g.hosts) for g in r.groups] == [
        ("node", ("a",)),
        ("node", ("c",)),
        ("pair", ("a", "b")),
        ("cluster", ("a", "b", "c")),
    ]


@pytest.mark.parametrize(("slower", "status"), [(49.9, "fail"), (50.0, "pass")])
def test_two_peers_suffice_and_the_peer_bar_is_exact(slower: float, status: str) -> None:
    """Two nodes with no public figure (gloo): the slower fails below 50% of the faster, not at it."""
    raw = [group("node", "0", 2, 100.0), group("node", "1", 2, slower)]
    r = busbw.judge("gloo", raw, {}, (host("a", 0), host("b", 0)), Settings(), 1.0)
    assert [g.status for g in r.groups] == ["pass", status]
    if status == "fail":
        assert r.groups[1].note == "below 50% of the median 100 GB/s of its 1 peer(s)"


def test_no_node_is_named_when_every_pair_is_slow() -> None:
    """Every pair slow is the network, not one node: each pair is listed, no node is blamed."""
    raw = [group("pair", label, 2, 0.01) for label in ("0-1", "0-2", "1-2")]
    s = Settings(expected_inter_gbps=10)
    r = busbw.judge("gloo", raw, {}, (host("a", 0), host("b", 0), host("c", 0)), s, 1.0)
    assert [g.status for g in r.groups] == ["fail"] * 3
    assert not any(f.startswith("node ") for f in r.findings)
    assert [f.split(":")[1] for f in r.findings] == [
        " all-reduce between a and b",
        " all-reduce between a and c",
        " all-reduce between b and c",
    ]


def test_a_named_slow_node_hides_only_its_pairs_and_the_cluster() -> None:
    """Node c is named for its pairs; node a's own slow NVLink is still a finding of its own."""
    raw = [
        group("node", "0", 8, 50.0),
        group("node", "1", 8, 360.0),
        group("node", "2", 8, 360.0),
        group("pair", "0-1", 16, 40.0),
        group("pair", "0-2", 16, 4.0),
        group("pair", "1-2", 16, 4.0),
        group("cluster", "all", 24, 4.0),
    ]
    ib = {**NV, "nics": [NDR]}
    preflight = (host("a"), host("b"), host("c"))
    r = busbw.judge("nccl", raw, {h: ib for h in "abc"}, preflight, Settings(), 1.0)
    assert r.findings[0].startswith("node c is slow: every pair with it is (a <-> c 4, b <-> c 4 GB/s)")
    assert r.findings[1].startswith("fail: all-reduce within node a: 50 GB/s busbw")
    assert len(r.findings) == 2
