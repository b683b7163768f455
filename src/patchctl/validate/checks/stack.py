"""The ``stack`` check: every host's software side by side, before Ray starts (issue 22 req 3).

The hosts' preflight found each part without importing it (host/stack.py). A difference Ray or
NCCL cannot survive stops the run naming the hosts on each side:

- Ray's version: Ray refuses a node or driver whose Ray differs from the head's
  (``ray._private.utils.check_version_info``);
- Python's version: the same function compares it too, to the patch level by default
  (``RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL=minor`` on every host relaxes it to major.minor);
- NCCL's major version: NCCL's wire protocol is only compatible within a major version, and a
  mismatch hangs or fails the first collective across the two hosts instead of erroring.

Any other difference (torch, CUDA, driver, vLLM, flash-attn, the tree's commit, the patches) is
a warning: it changes numbers, not whether the run can start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from patchctl.validate.errors import StackMismatch
from patchctl.validate.model import HostPreflight

#: column -> its title in the table, in order
COLUMNS = {
    "python": "Python",
    "torch": "torch",
    "torch_cuda": "torch CUDA",
    "nccl": "NCCL",
    "driver": "driver",
    "cuda_api": "driver CUDA API",
    "vllm": "vLLM",
    "ray": "Ray",
    "flash_attn": "flash-attn",
    "verl_commit": "verl tree commit",
    "patches": "patch verification",
    "gpu": "GPU",
}
#: columns whose difference stops the run (see the module doc)
HARD = ("ray", "python", "nccl")


@dataclass(frozen=True)
class StackTable:
    #: host labels, in the cluster's order
    hosts: tuple[str, ...]
    #: column -> one value per host ("-" where absent)
    rows: dict[str, tuple[str, ...]]
    #: one line per hard mismatch, naming the hosts on each side
    mismatches: tuple[str, ...] = ()
    #: one line per other difference
    warnings: tuple[str, ...] = ()
    #: column -> (this run's values, an earlier run's) when compared
    compared: dict[str, tuple[str, str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "hosts": list(self.hosts),
            "rows": {k: list(v) for k, v in self.rows.items()},
            "mismatches": list(self.mismatches),
            "warnings": list(self.warnings),
            "compared": {k: list(v) for k, v in self.compared.items()},
        }


def _patches(h: HostPreflight) -> str:
    row = next((r for r in h.rows if r.check == "patches"), None)
    if row is None or row.status == "skip":
        return "-"
    return f"{row.status}: {row.value.split(';')[0]}"


def _cell(h: HostPreflight, key: str) -> str:
    if key == "patches":
        return _patches(h)
    value = h.stack.get(key)
    return "-" if value in (None, "") else str(value)


def _key(column: str, value: str, relaxed: bool) -> str:
    """What must agree: NCCL's major, Python's major.minor where Ray was told so, else all."""
    if column == "nccl":
        return value.split(".")[0]
    if column == "python" and relaxed:
        return ".".join(value.split(".")[:2])
    return value


def _groups(hosts: tuple[str, ...], values: tuple[str, ...]) -> str:
    by: dict[str, list[str]] = {}
    for h, v in zip(hosts, values, strict=True):
        by.setdefault(v, []).append(h)
    return "; ".join(f"{v} on {', '.join(hs)}" for v, hs in by.items())


def table(preflight: tuple[HostPreflight, ...], relaxed_python: bool = False) -> StackTable:
    hosts = tuple(h.label for h in preflight)
    rows = {k: tuple(_cell(h, k) for h in preflight) for k in COLUMNS}
    hard, soft = [], []
    for column, values in rows.items():
        if len(set(values)) < 2:
            continue
        line = f"{COLUMNS[column]} differs: {_groups(hosts, values)}"
        if column in HARD and len({_key(column, v, relaxed_python) for v in values}) > 1:
            hard.append(line)
        else:
            soft.append(line)
    return StackTable(hosts, rows, tuple(hard), tuple(soft))


def check(preflight: tuple[HostPreflight, ...], relaxed_python: bool = False) -> StackTable:
    """The table; raises :class:`StackMismatch` (naming the hosts) on a difference Ray or NCCL
    cannot survive, with the table attached so it is still shown."""
    t = table(preflight, relaxed_python)
    if t.mismatches:
        raise StackMismatch(t.mismatches, t)
    return t


def compare(new: StackTable, old: dict[str, Any]) -> StackTable:
    """``--compare``: each column's values here beside an earlier run's (its validate.json)."""
    rows = (old.get("rows") or {}) if isinstance(old, dict) else {}
    out = {}
    for column in COLUMNS:
        mine = ", ".join(dict.fromkeys(new.rows.get(column, ())))
        theirs = ", ".join(dict.fromkeys(str(v) for v in rows.get(column, []))) or "-"
        out[column] = (mine, theirs)
    return StackTable(new.hosts, new.rows, new.mismatches, new.warnings, out)
