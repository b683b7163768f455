"""Public all-reduce bus-bandwidth figures, by GPU and interconnect, to judge a measurement by.

busbw as nccl-tests defines it (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md):
``algbw * 2(n-1)/n`` for all-reduce, comparable across rank counts, at large message sizes.

Sources:
- 8 x H100 SXM (NVLink 4 through NVSwitch), NVLink multicast (NVLS) off: about 370 GB/s — the
  figure issue 22 cites; with NVLS on, 460-480 GB/s, and 8 x A100 SXM 230-250 GB/s, 8 x H100 PCIe
  without NVLink 35-45 GB/s (Alaya NeW, "NCCL-tests in practice", reference table,
  https://docs.alayanew.com/en/docs/tech-blog/2026-05-06-nccl-tests). H200 has H100's NVLink 4.
- InfiniBand NDR (400 Gb/s = 50 GB/s line rate): 46-48 GB/s busbw per NIC across nodes (issue 22);
  NCCL drives one NIC per GPU at most, so a pair of nodes expects 47 x min(NICs, GPUs per node).

- 2 x H200 SXM joined by NVLink 4 (``nvidia-smi topo -m``: NV18, 18 links): 297 and 296 GB/s
  busbw, NCCL 2.28.9, all-reduce of 256 MiB, NVLS off, measured on this project's
  ``nvidia-h200-x2`` machine on 2026-11-28 (issue 40; ../shared/gpu/README.md). H100 SXM has the
  same NVLink 4 with 18 links, so the figure is applied to it too.

Derived from the link each host reports (issue 40 req 5), each with its formula:

- 2 GPUs joined by ``NV<k>`` (``nvidia-smi topo -m``: k NVLinks between them), other than the
  measured H100/H200 NV18 pair: ``k x per-link GB/s x 0.66``. Per link and direction, from NVIDIA's
  datasheets (total bidirectional NVLink bandwidth / links): NVLink 2 on V100 300 GB/s / 6 links,
  NVLink 3 on A100 600 GB/s / 12, NVLink 4 on H100/H200 900 GB/s / 18 — 25 GB/s each way per link;
  NVLink 5 on B200/GB200 1.8 TB/s / 18 — 50 GB/s. 0.66 is the efficiency measured here: 297 GB/s of
  NV18's 18 x 25 = 450 GB/s. A 2-rank all-reduce's busbw equals its algbw, and each rank sends and
  receives half the buffer twice, so one direction of the link is the bound (nccl-tests
  doc/PERFORMANCE.md: busbw is "comparable to the hardware peak bandwidth").
- Across a pair of nodes over RDMA (``/sys/class/infiniband/*/ports/*``: ``rate`` such as
  "400 Gb/sec (4X NDR)", ``link_layer`` "InfiniBand", or "Ethernet" for RoCE): ``0.94 x rate/8 x
  min(active RDMA ports, GPUs per node)``, the fastest ports first, the slower host of the pair
  deciding. 0.94 is the NDR figure above (47 of 50 GB/s line rate); NCCL drives InfiniBand and
  RoCE through the same verbs transport (``NCCL_IB_*`` covers both, ``NCCL_IB_GID_INDEX`` is
  RoCE's), so the ratio is applied to either at the port's rate (NDR: 50 x 0.94 = 47 GB/s again).
- No figure (said so in the report row, the pair then judged by its peers and the config's bars):
  NCCL over TCP sockets (no RDMA port active, or ``NCCL_IB_DISABLE=1``) — the line rate of
  ``/sys/class/net/*/speed`` is shown, but no published busbw per Gb/s exists for NCCL's socket
  transport; gloo on CPUs; GPUs on PCIe other than 8 x H100; NVLink layouts of other sizes.

A published or measured figure is only applied to the configuration it was taken on; anything else
is compared with its peers and the cluster config's bars.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: GPU name fragment -> GB/s of an 8-GPU NVLink all-reduce with NVLS off, and with it on
NVLINK_8 = {"H100": (370.0, 470.0), "H200": (370.0, 470.0), "A100": (240.0, 240.0)}
#: GPU name fragment -> GB/s of a 2-GPU all-reduce over NVLink 4 with 18 links (topo "NV18")
NVLINK_2_NV18 = {"H200": 297.0, "H100": 297.0}
SOURCE_NV18 = (
    "2 x H200 NVLink 4 (NV18) all-reduce measured on nvidia-h200-x2, 2026-11-28: 297 and 296 GB/s, "
    "NCCL 2.28.9, 256 MiB (issue 40)"
)
#: GPU name fragment -> GB/s of an 8-GPU all-reduce over PCIe only
PCIE_8 = {"H100": 40.0}
#: GB/s busbw per InfiniBand NDR NIC across nodes
NDR_NIC = 47.0
SOURCE_NVLINK = "8 x GPU NVLink all-reduce (issue 22; docs.alayanew.com nccl-tests reference table)"
SOURCE_IB = "46-48 GB/s per InfiniBand NDR NIC (issue 22)"


@dataclass(frozen=True)
class Figure:
    gbps: float
    #: where it comes from, as the report shows it
    source: str


def _fragment(gpu: str, table: dict[str, Any]) -> str | None:
    return next((k for k in table if k in gpu), None)


def intra(gpu: str, n: int, topology: str, nvls: bool) -> Figure | None:
    """The figure for one node's ``n`` GPUs named ``gpu`` (None: no public figure applies)."""
    links = [t for t in topology.split(", ") if t]
    if n == 2 and links == ["NV18"] and (key := _fragment(gpu, NVLINK_2_NV18)):
        return Figure(NVLINK_2_NV18[key], SOURCE_NV18)
    if n == 2:
        return nvlink_pair(gpu, topology)
    if n != 8:
        return None
    nvlink = any(t.startswith("NV") for t in links)
    if nvlink and (key := _fragment(gpu, NVLINK_8)):
        off, on = NVLINK_8[key]
        return Figure(on if nvls else off, f"{SOURCE_NVLINK}, NVLS {'on' if nvls else 'off'}")
    if not nvlink and topology and (key := _fragment(gpu, PCIE_8)):
        return Figure(PCIE_8[key], "8 x H100 PCIe without NVLink (docs.alayanew.com nccl-tests reference table)")
    return None


#: NVIDIA datasheets: NVLink GB/s per link and direction, by GPU name fragment (longest first)
NVLINK_PER_LINK = {"GB200": 50.0, "B200": 50.0, "H200": 25.0, "H100": 25.0, "A100": 25.0, "V100": 25.0}
SOURCE_PER_LINK = (
    "NVIDIA datasheets: NVLink 900 GB/s over 18 links (H100/H200), 600/12 (A100), 300/6 (V100), 1.8 TB/s/18 (B200)"
)
#: 297 GB/s measured on NV18 (18 x 25 GB/s): the share of one direction a 2-GPU all-reduce reaches
NVLINK_2_EFFICIENCY = 0.66
#: busbw per RDMA port over its line rate: 47 of NDR's 50 GB/s (issue 22)
RDMA_EFFICIENCY = 0.94
_NV = re.compile(r"NV(\d+)$")
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec")


def nvlink_pair(gpu: str, topology: str) -> Figure | None:
    """2 GPUs on ``NV<k>`` of a known NVLink generation: k x per-link x the measured efficiency."""
    links = [t for t in topology.split(", ") if t]
    m = _NV.match(links[0]) if len(links) == 1 else None
    key = next((k for k in NVLINK_PER_LINK if k in gpu), None)
    if not m or key is None:
        return None
    k, per = int(m.group(1)), NVLINK_PER_LINK[key]
    return Figure(
        round(k * per * NVLINK_2_EFFICIENCY, 1),
        f"NV{k} x {per:g} GB/s per link ({SOURCE_PER_LINK}) x {NVLINK_2_EFFICIENCY} (the 2 x H200 NV18 "
        "measurement's share: 297 of 450 GB/s)",
    )


def no_intra(gpu: str, n: int, topology: str) -> str:
    """Why no figure applies to one node's ``n`` GPUs, as the report row says it."""
    if not topology:
        return f"no figure: nvidia-smi topo -m told nothing of how the {n} GPUs connect"
    if not any(t.startswith("NV") for t in topology.split(", ")):
        return f"no figure: {n} GPUs over PCIe/SMP ({topology}), PCIe generation unknown"
    return f"no figure: {n} x {gpu or 'GPU'} over {topology} (figures exist for 2 GPUs on one NV# and 8 GPUs)"


def line_rate(rate: str) -> float | None:
    """GB/s of a sysfs ``rate`` such as "400 Gb/sec (4X NDR)" (None: unreadable)."""
    m = _RATE.match(rate)
    return float(m.group(1)) / 8 if m else None


def rdma_ports(info: dict[str, Any]) -> list[tuple[float, str]]:
    """A host's active RDMA ports as ``(line rate GB/s, kind)``, fastest first; a port without a
    ``link_layer`` (reported before the host side read it) is InfiniBand, the only kind then read."""
    out = []
    for n in info.get("nics", []):
        rate = line_rate(n.get("rate", ""))
        if rate and "ACTIVE" in n.get("state", ""):
            out.append((rate, "RoCE" if n.get("link_layer") == "Ethernet" else "InfiniBand"))
    return sorted(out, reverse=True)


def _rdma(ports: list[tuple[float, str]], used: int) -> tuple[float, str]:
    mine = ports[:used]
    total = sum(r * RDMA_EFFICIENCY for r, _ in mine)  # NDR: 50 x 0.94 = the 47 GB/s it is derived from
    kinds = ", ".join(sorted({f"{r * 8:g} Gb/s {k}" for r, k in mine}))
    return total, kinds


def inter(infos: list[dict[str, Any]], gpus_per_node: int, backend: str = "nccl") -> Figure | str:
    """The figure for a pair of nodes from what each host reported (NICs, watched variables),
    or the reason none applies, as the report row says it."""
    if backend != "nccl":
        return f"no figure: {backend} on CPUs (published figures are NCCL's)"
    if any(i.get("env", {}).get("NCCL_IB_DISABLE") == "1" for i in infos):
        return "no figure: NCCL_IB_DISABLE=1, NCCL over TCP sockets" + _ethernet(infos)
    best: tuple[float, str] | None = None
    for i in infos:
        ports = rdma_ports(i)
        used = min(len(ports), gpus_per_node)
        if used < 1:
            return "no figure: no active RDMA port (InfiniBand/RoCE), NCCL over TCP sockets" + _ethernet(infos)
        total, kinds = _rdma(ports, used)
        if best is None or total < best[0]:
            best = (total, f"{used} x {kinds}")
    assert best is not None
    return Figure(
        round(best[0], 1),
        f"{best[1]} port(s) x line rate x {RDMA_EFFICIENCY} ({SOURCE_IB}: 47 of 50 GB/s)",
    )


def _ethernet(infos: list[dict[str, Any]]) -> str:
    """The plain Ethernet line rate the hosts report (``/sys/class/net/*/speed``, Mb/s), shown only."""
    rates = [max((e["speed"] for e in i.get("ethernet", []) if e.get("speed")), default=0) for i in infos]
    if not rates or not min(rates):
        return ""
    return f" on Ethernet of {min(rates) / 1000:g} Gb/s ({min(rates) / 8000:g} GB/s line rate; no published figure)"
