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

A figure is only applied where the measured configuration is the one it was taken on (8 GPUs for
the NVLink figures, 2 GPUs on NV18 for the measured pair); anything else is compared with its peers
and the cluster config's bars.
"""

from __future__ import annotations

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
    if n != 8:
        return None
    nvlink = any(t.startswith("NV") for t in links)
    if nvlink and (key := _fragment(gpu, NVLINK_8)):
        off, on = NVLINK_8[key]
        return Figure(on if nvls else off, f"{SOURCE_NVLINK}, NVLS {'on' if nvls else 'off'}")
    if not nvlink and topology and (key := _fragment(gpu, PCIE_8)):
        return Figure(PCIE_8[key], "8 x H100 PCIe without NVLink (docs.alayanew.com nccl-tests reference table)")
    return None


def inter(ndr_nics: int, gpus_per_node: int) -> Figure | None:
    """The figure for a pair of nodes, from the active NDR NICs each has (None: no IB NDR seen)."""
    used = min(ndr_nics, gpus_per_node)
    if used < 1:
        return None
    return Figure(NDR_NIC * used, f"{SOURCE_IB} x {used} NIC(s)")
