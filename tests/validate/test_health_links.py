"""Health judges what it measures (issue 40 req 5): the link each host reports sets the figure a
group is held to, a group with no figure says why in its row, and pairs are held to their peers.

The inputs are real formats: ``nvidia-smi topo -m`` matrices in tests/validate/links/, and sysfs
trees written here with the kernel's strings, read by the host side's own readers.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from patchctl.cli import validate_health
from patchctl.validate.checks import busbw
from patchctl.validate.checks.settings import Settings
from patchctl.validate.host import allreduce
from patchctl.validate.model import CheckRow, HostPreflight

LINKS = Path(__file__).parent / "links"
H100 = "NVIDIA H100 80GB HBM3"


def host(label: str, gpus: int = 8, gpu: str = H100) -> HostPreflight:
    return HostPreflight(label, (CheckRow("patches", "pass", ""),), "10.0.0.1", gpus, None, 0.1, {"gpu": gpu})


def group(kind: str, label: str, n: int, gbps: float) -> dict[str, Any]:
    size = {"bytes": 256 << 20, "seconds": 0.001, "algbw": gbps * n / (2 * (n - 1)), "busbw": gbps}
    return {"kind": kind, "label": label, "n": n, "busbw": gbps, "sizes": [size], "correct": True}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n", encoding="utf-8")


def port(base: Path, dev: str, rate: str, state: str, layer: str) -> None:
    for key, value in (("rate", rate), ("state", state), ("link_layer", layer)):
        write(base / dev / "ports" / "1" / key, value)


# -- the host side reads the real formats ------------------------------------------------------


def test_only_gpu_to_gpu_links_count_in_the_topology() -> None:
    """A node with NICs lists GPU-to-NIC cells (PIX, SYS) in its GPU rows: they are not how its
    GPUs connect, so an all-NVLink node stays all-NVLink."""
    read = {f.stem: allreduce.parse_topology(f.read_text(encoding="utf-8")) for f in LINKS.glob("topo-*.txt")}
    assert read == {"topo-4xH800-17nics": "NV8", "topo-2xH200": "NV18", "topo-2xL40S-pcie": "SYS"}


def test_the_rdma_ports_and_the_ethernet_line_rates_are_read_from_sysfs(tmp_path: Path) -> None:
    ib, net = tmp_path / "infiniband", tmp_path / "net"
    port(ib, "mlx5_0", "400 Gb/sec (4X NDR)", "4: ACTIVE", "InfiniBand")
    port(ib, "mlx5_1", "200 Gb/sec (4X HDR)", "4: ACTIVE", "Ethernet")
    for name, speed, state in (("eth0", "100000", "up"), ("eth1", "-1", "up"), ("eth2", "25000", "down")):
        write(net / name / "speed", speed)
        write(net / name / "operstate", state)
        (net / name / "device").mkdir()
    write(net / "lo" / "operstate", "unknown")  # no speed file, no device: the kernel refuses the read
    write(net / "eth3" / "operstate", "up")  # a NIC whose speed read fails (EINVAL), as a link down does
    (net / "eth3" / "device").mkdir()
    assert allreduce.nics(str(ib)) == [
        {"name": "mlx5_0/1", "rate": "400 Gb/sec (4X NDR)", "state": "4: ACTIVE", "link_layer": "InfiniBand"},
        {"name": "mlx5_1/1", "rate": "200 Gb/sec (4X HDR)", "state": "4: ACTIVE", "link_layer": "Ethernet"},
    ]
    assert allreduce.ethernet(str(net)) == [{"name": "eth0", "speed": 100000}]


# -- the figure each link sets, or why none ------------------------------------------------------


def pair(info: dict[str, Any], gbps: float, gpus: int = 8, backend: str = "nccl") -> busbw.Group:
    raw = [group("pair", "0-1", 2 * gpus, gbps)]
    (g,) = busbw.judge(backend, raw, {"a": info, "b": info}, (host("a", gpus), host("b", gpus)), Settings(), 1.0).groups
    return g


def test_two_a100s_on_nv12_are_held_to_the_datasheet_rate_times_the_measured_efficiency() -> None:
    """12 links x 25 GB/s x 0.66 = 198 GB/s; a pair far below fails with no config bar."""
    a100 = host("a", gpus=2, gpu="NVIDIA A100-SXM4-80GB")
    info = {"a": {"topology": "NV12", "env": {}, "nics": []}}
    (g,) = busbw.judge("nccl", [group("node", "0", 2, 70.0)], info, (a100,), Settings(), 1.0).groups
    assert (g.expected, g.status) == (198.0, "fail")
    assert g.source.startswith("NV12 x 25 GB/s per link") and "297 of 450" in g.source


def test_a_gpu_of_no_known_nvlink_generation_or_on_pcie_gets_no_figure_and_says_why() -> None:
    topo = allreduce.parse_topology((LINKS / "topo-4xH800-17nics.txt").read_text(encoding="utf-8"))
    (g,) = busbw.judge(
        "nccl",
        [group("node", "0", 2, 10.0)],
        {"a": {"topology": topo}},
        (host("a", 2, "NVIDIA H800"),),
        Settings(),
        1.0,
    ).groups
    assert (g.expected, g.status) == (None, "pass")
    assert g.source == "no figure: 2 x NVIDIA H800 over NV8 (figures exist for 2 GPUs on one NV# and 8 GPUs)"
    reasons = [
        busbw.judge("nccl", [group("node", "0", 2, 1.0)], {"a": {"topology": t}}, (host("a", 2),), Settings(), 1.0)
        .groups[0]
        .source
        for t in ("", "SYS")
    ]
    assert reasons == [
        "no figure: nvidia-smi topo -m told nothing of how the 2 GPUs connect",
        "no figure: 2 GPUs over PCIe/SMP (SYS), PCIe generation unknown",
    ]


def test_a_roce_pair_far_below_its_ports_fails_without_a_config_bar() -> None:
    """2 RoCE ports of 200 Gb/s per host: 2 x 25 GB/s x 0.94 = 47 GB/s."""
    ports = [
        {"name": f"mlx5_{i}/1", "rate": "200 Gb/sec (4X HDR)", "state": "4: ACTIVE", "link_layer": "Ethernet"}
        for i in range(2)
    ]
    g = pair({"env": {}, "topology": "NV18", "nics": ports}, 10.0)
    assert (g.expected, g.status) == (47.0, "fail")
    assert g.source.startswith("2 x 200 Gb/s RoCE port(s) x line rate x 0.94")
    # a host of one GPU drives one port, its fastest: NCCL uses one NIC per GPU at most
    ndr = {"name": "mlx5_2/1", "rate": "400 Gb/sec (4X NDR)", "state": "4: ACTIVE", "link_layer": "Ethernet"}
    assert pair({"env": {}, "topology": "", "nics": [*ports, ndr]}, 20.0, gpus=1).expected == 47.0
    edr = {**ndr, "rate": "100 Gb/sec (4X EDR)", "link_layer": "InfiniBand"}
    assert pair({"env": {}, "topology": "", "nics": [edr]}, 20.0).expected == 11.8  # 12.5 x 0.94 = 11.75


def test_the_slower_host_of_a_pair_decides_its_figure() -> None:
    ndr = {"rate": "400 Gb/sec (4X NDR)", "state": "4: ACTIVE", "link_layer": "InfiniBand"}
    two = {"env": {}, "topology": "NV18", "nics": [{**ndr, "name": "mlx5_0/1"}, {**ndr, "name": "mlx5_1/1"}]}
    one = {**two, "nics": two["nics"][:1]}
    raw = [group("pair", "0-1", 16, 30.0)]
    (g,) = busbw.judge("nccl", raw, {"a": two, "b": one}, (host("a"), host("b")), Settings(), 1.0).groups
    assert (g.expected, g.status) == (47.0, "warn")


def test_no_figure_is_said_in_the_row_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    """Sockets over Ethernet, gloo on CPUs: no silent pass; the row says why there is no figure."""
    sockets = {"env": {"NCCL_IB_DISABLE": "1"}, "topology": "NV18", "nics": [], "ethernet": [{"speed": 100000}]}
    slower = {**sockets, "ethernet": [{"speed": 25000}, {"speed": 10000}]}  # the host's fastest, the pair's slower
    raw = [group("pair", "0-1", 16, 5.0)]
    (g,) = busbw.judge("nccl", raw, {"a": sockets, "b": slower}, (host("a"), host("b")), Settings(), 1.0).groups
    assert (g.expected, g.status) == (None, "pass")
    assert g.source == (
        "no figure: NCCL_IB_DISABLE=1, NCCL over TCP sockets on Ethernet of 25 Gb/s "
        "(3.125 GB/s line rate; no published figure)"
    )
    g = pair({}, 0.5, gpus=0, backend="gloo")
    assert g.source == "no figure: gloo on CPUs (published figures are NCCL's)"
    r = busbw.judge("gloo", [group("pair", "0-1", 2, 0.5)], {}, (host("a", 0), host("b", 0)), Settings(), 1.0)
    (node,) = busbw.judge("gloo", [group("node", "0", 2, 0.5)], {}, (host("a", 0),), Settings(), 1.0).groups
    assert node.source == "no figure: gloo on CPUs (published figures are NCCL's)"
    validate_health.show(SimpleNamespace(interconnect=r, storage=(), stack=None, seconds={}))
    assert "no figure: gloo on CPUs (published figures are NCCL's); peers only" in capsys.readouterr().out


# -- peers ----------------------------------------------------------------------------------------


def pairs_of(rates: dict[str, float], nodes: int) -> busbw.Interconnect:
    raw = [group("pair", label, 2, gbps) for label, gbps in rates.items()]
    preflight = tuple(host("abcdefgh"[i], 0) for i in range(nodes))
    return busbw.judge("gloo", raw, {}, preflight, Settings(), 1.0)


def test_one_fast_pair_moves_no_bar() -> None:
    """4 nodes, the pair on one leaf switch 2.5x the rest: held to the median of the others, no
    pair fails (held to the best peer, every other pair would)."""
    r = pairs_of({"0-1": 250.0, "0-2": 100.0, "0-3": 100.0, "1-2": 100.0, "1-3": 100.0, "2-3": 100.0}, 4)
    assert [g.status for g in r.groups] == ["pass"] * 6
    assert r.findings == ()


def test_one_bad_pair_fails_by_name_and_no_node_is_blamed() -> None:
    r = pairs_of({"0-1": 30.0, "0-2": 100.0, "0-3": 100.0, "1-2": 100.0, "1-3": 100.0, "2-3": 100.0}, 4)
    assert [(g.hosts, g.status) for g in r.groups if g.status != "pass"] == [(("a", "b"), "fail")]
    assert r.findings == (
        "fail: all-reduce between a and b: 30 GB/s busbw, below 50% of the median 100 GB/s of its 5 peer(s); "
        "likely cause: a: no ifname set (NCCL/gloo pick an interface); b: no ifname set (NCCL/gloo pick an interface)",
    )


def test_with_three_nodes_a_slow_node_is_held_to_the_pair_without_it() -> None:
    """c at 40%: each of its pairs has one slow and one fast peer (median 70, 57% of it passes the
    pair check), but both are below 50% of the pair without c, so c is named."""
    r = pairs_of({"0-1": 100.0, "0-2": 40.0, "1-2": 40.0}, 3)
    assert [g.status for g in r.groups] == ["pass", "fail", "fail"]
    assert r.groups[1].note == "node c: every pair with it below 50% of the median 100 GB/s of the pairs without it"
    assert r.findings[0].startswith("node c is slow: every pair with it is (a <-> c 40, b <-> c 40 GB/s)")
    # at 60% it is within the bar: no node named
    assert pairs_of({"0-1": 100.0, "0-2": 60.0, "1-2": 60.0}, 3).findings == ()


@pytest.mark.parametrize("rate", [40.0, 10.0])
def test_with_two_nodes_the_one_pair_has_no_peers(rate: float) -> None:
    assert [g.status for g in pairs_of({"0-1": rate}, 2).groups] == ["pass"]


@pytest.mark.parametrize(("slow", "status"), [(49.9, "fail"), (50.0, "pass")])
def test_the_slow_node_bar_sits_exactly_at_peer_percent(slow: float, status: str) -> None:
    r = pairs_of({"0-1": 100.0, "0-2": slow, "1-2": slow}, 3)
    assert [g.status for g in r.groups] == ["pass", status, status]
