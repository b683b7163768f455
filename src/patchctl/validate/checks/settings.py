"""``[clusters.NAME.health]``: the bars and bounds of validate's health checks, with defaults.

Every key is optional. The defaults suit a GPU cluster: a 1 GiB storage probe (big enough to
pass the page cache's write-back, small enough for a minute), nccl-tests' message sweep
(1 MiB to 256 MiB), and bars relative to the public figures of :mod:`expected`, so a user of
a known GPU and interconnect sets nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from patchctl.errors import ManifestError
from patchctl.schema import Field, check


@dataclass(frozen=True)
class Settings:
    #: bytes written and read back per directory and host
    storage_bytes: int = 1 << 30
    #: MB/s (10^6 bytes) of write or read below which storage warns, then fails
    storage_warn_mbps: int = 500
    storage_fail_mbps: int = 100
    #: the checkpoint directory on the hosts (default: ``ROOT/checkpoints``, verl's default_local_dir)
    checkpoint_dir: str = ""
    #: the all-reduce sweep: message sizes from min to max bytes, x4 each step, as nccl-tests -f
    allreduce_min_bytes: int = 1 << 20
    allreduce_max_bytes: int = 256 << 20
    allreduce_warmup: int = 5
    allreduce_iters: int = 20
    #: busbw below this % of the expected figure warns, below the second fails
    busbw_warn_percent: int = 70
    busbw_fail_percent: int = 40
    #: a node or pair below this % of its best peer is named, though no figure is known
    peer_percent: int = 50
    #: GB/s expected within a node / across two nodes (0: the public figure for the hardware seen)
    expected_intra_gbps: int = 0
    expected_inter_gbps: int = 0
    #: seconds the whole interconnect measurement may take (the sweep stops early past it)
    interconnect_seconds: int = 30


HINTS = {
    "storage_bytes": "bytes per directory and host, e.g. 1073741824",
    "storage_warn_mbps": "MB/s, e.g. 500",
    "storage_fail_mbps": "MB/s, e.g. 100",
    "checkpoint_dir": 'an absolute path, e.g. "/scratch/checkpoints"',
    "allreduce_min_bytes": "bytes, e.g. 1048576",
    "allreduce_max_bytes": "bytes, e.g. 268435456",
    "allreduce_warmup": "iterations, e.g. 5",
    "allreduce_iters": "iterations, e.g. 20",
    "busbw_warn_percent": "a percentage, e.g. 70",
    "busbw_fail_percent": "a percentage, e.g. 40",
    "peer_percent": "a percentage, e.g. 50",
    "expected_intra_gbps": "GB/s, e.g. 370",
    "expected_inter_gbps": "GB/s, e.g. 48",
    "interconnect_seconds": "seconds, e.g. 30",
}
SCHEMA = {f.name: Field(str if f.type == "str" else int, False, HINTS[f.name]) for f in fields(Settings)}


def load(raw: Any, file: Path, prefix: str) -> Settings:
    """The table checked against :data:`SCHEMA`, each number in its range (the key path named)."""
    if not isinstance(raw, dict):
        raise ManifestError(file, prefix.rstrip("."), "expected a table", "write [clusters.NAME.health]")
    check(raw, SCHEMA, file=file, prefix=prefix)
    for key, value in raw.items():
        if key == "checkpoint_dir":
            if not value.startswith("/"):
                raise ManifestError(file, prefix + key, f"{value!r} is not absolute", f"write {HINTS[key]}")
        elif value < 0 or (value == 0 and not key.startswith("expected_")) or (key.endswith("percent") and value > 100):
            raise ManifestError(file, prefix + key, f"{value} is out of range", f"write {HINTS[key]}")
    s = Settings(**raw)
    if s.allreduce_min_bytes > s.allreduce_max_bytes:
        raise ManifestError(file, prefix + "allreduce_min_bytes", "is above allreduce_max_bytes", "swap them")
    if s.busbw_fail_percent > s.busbw_warn_percent or s.storage_fail_mbps > s.storage_warn_mbps:
        raise ManifestError(
            file,
            prefix + ("busbw_fail_percent" if s.busbw_fail_percent > s.busbw_warn_percent else "storage_fail_mbps"),
            "is above its warn bar",
            "lower it",
        )
    return s
