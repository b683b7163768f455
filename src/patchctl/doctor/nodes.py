"""The odd node out: each host of a multi-host run compared with its peers (issue 37, req. 3).

One node of eight with another driver, a throttled GPU or a socket transport where the others use
InfiniBand slows or hangs the whole run, and its own log says nothing wrong. Cluster operators find
it by comparing each node with the others; so does this module, per property:

- package versions and Python, from ``validate.json``'s per-host preflight rows, and from a
  host's ``pip freeze`` (``hosts/HOST/pip-freeze.txt``);
- driver and CUDA, from the preflight's torch row or ``hosts/HOST/nvidia-smi.txt``;
- GPU clocks and uncorrected ECC errors, from ``hosts/HOST/gpus.csv`` (``nvidia-smi
  --query-gpu=index,clocks.sm,clocks.max.sm,ecc.errors.uncorrected.volatile.total --format=csv``);
- Xid errors, from ``hosts/HOST/dmesg.txt`` (``NVRM: Xid (PCI:...): 79, ...``);
- NCCL's chosen transports, from the ``NCCL INFO Channel ... via NET/IB/0`` and ``Using network IB``
  lines of each host's logs (and of the trainer log, where the line's hostname prefix names the host);
- step time, from the ``timing_s/step:`` values each host's log prints.

A property where all hosts but one agree names that one host, with its value and the others';
errors (Xid, ECC) name every host that has any. Two hosts that differ are both named: with two,
nothing says which is the odd one.
"""

from __future__ import annotations

import csv
import io
import json
import re
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchctl.doctor.versions import seen_versions

HOSTS = "hosts"
#: "driver 580.159.04", "Driver Version: 550.54.15", "Driver Version                  : 550.54.15"
DRIVER = re.compile(r"(?:\bdriver |Driver Version *: *)(\d+(?:\.\d+)+)")
#: "CUDA 13.0 driver API" (preflight), "CUDA Version: 12.4" / "CUDA Version : 12.4" (nvidia-smi)
CUDA = re.compile(r"(?:\bCUDA (\d+\.\d+) driver API|CUDA Version *: *(\d+\.\d+))")
PYTHON = re.compile(r"\bPython (\d+\.\d+\.\d+)")
#: "NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus."
XID = re.compile(r"NVRM: Xid \([^()\n]*\): (\d+)")
#: NCCL's line prefix "node1:812:900 [3] NCCL INFO ..." (after an optional Ray prefix)
NCCL_LINE = re.compile(r"(?:^|\) )([A-Za-z0-9][\w.-]*):\d+:\d+ \[(\d+)\] NCCL INFO (?:Channel \d+/\d+ : |NET/)")
#: "... Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0" or "via P2P/CUMEM": the transport's first two
#: parts (P2P/IPC, P2P/CUMEM, SHM/direct, NET/IB, NET/Socket)
VIA = re.compile(r" via ([A-Za-z0-9]+/[A-Za-z]+)")
#: "NCCL INFO Using network IB": the network NCCL chose for traffic between nodes
USING_NETWORK = re.compile(r"NCCL INFO Using network (\w+)")
#: verl's per-step time in a metrics line
STEP_TIME = re.compile(r"\btiming_s/step:(\d+(?:\.\d+)?)")
#: pip freeze: "torch==2.6.0"
FREEZE = re.compile(r"^([A-Za-z0-9][\w.-]*)==([^\s;]+)")
#: a host whose median step time is this many times the others' median is slow
SLOW = 1.5
#: a host whose median SM clock is below this share of the others' is throttled
THROTTLED = 0.8
#: log files of a host read for NCCL lines and step times, and how much of each
LOG_SUFFIXES = (".log", ".out", ".err", ".txt")
READ_LIMIT = 64 << 20


@dataclass
class Host:
    name: str
    packages: dict[str, str] = field(default_factory=dict)
    driver: str = ""
    cuda: str = ""
    python: str = ""
    gpu: str = ""
    xids: Counter[str] = field(default_factory=Counter)
    ecc: int = 0
    clocks: list[float] = field(default_factory=list)
    max_clocks: list[float] = field(default_factory=list)
    transports: Counter[str] = field(default_factory=Counter)
    step_times: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class NodeFinding:
    id: str
    #: the host (or hosts) named
    hosts: tuple[str, ...]
    #: what differs: "driver", "package torch", "NCCL transport", ...
    what: str
    text: str

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "hosts": list(self.hosts), "what": self.what, "text": self.text}


def _host(hosts: dict[str, Host], name: str) -> Host:
    return hosts.setdefault(name, Host(name))


def from_validate(doc: dict[str, Any], hosts: dict[str, Host]) -> None:
    """Versions, driver and CUDA from each host's preflight rows; GPU names from the Ray nodes."""
    for entry in doc.get("preflight") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("label"), str):
            continue
        h = _host(hosts, entry["label"])
        for row in entry.get("rows") or []:
            value = str(row.get("value", "")) if isinstance(row, dict) else ""
            if row.get("status") == "skip":
                continue
            seen: dict[str, list[str]] = {}
            seen_versions(value, seen)
            for pkg, versions in seen.items():
                h.packages.setdefault(pkg, versions[0])
            if m := DRIVER.search(value):
                h.driver = h.driver or m.group(1)
            if m := CUDA.search(value):
                h.cuda = h.cuda or (m.group(1) or m.group(2))
            if row.get("check") == "python" and (m := PYTHON.search(value)):
                h.python = m.group(1)
    ray = doc.get("ray")
    for node in (ray.get("nodes") or []) if isinstance(ray, dict) else []:
        if isinstance(node, dict) and isinstance(node.get("label"), str):
            names = node.get("gpu_names") or []
            _host(hosts, node["label"]).gpu = ", ".join(sorted(set(map(str, names))))


def addresses(doc: dict[str, Any]) -> dict[str, str]:
    """Ray node address -> host label, from validate.json (a Ray log line names the address)."""
    ray = doc.get("ray")
    out: dict[str, str] = {}
    for node in (ray.get("nodes") or []) if isinstance(ray, dict) else []:
        if isinstance(node, dict) and node.get("address") and node.get("label"):
            out[str(node["address"])] = str(node["label"])
    return out


def read_lines(h: Host, lines: Iterable[str], by_prefix: dict[str, Host] | None = None) -> None:
    """NCCL transports and step times from log lines; a line's own NCCL hostname prefix is looked
    up in ``by_prefix`` (hostname -> host) when given, else the line counts for ``h``."""
    for line in lines:
        if "NCCL INFO" in line:
            target = h
            if by_prefix is not None and (m := NCCL_LINE.search(line)):
                target = by_prefix.setdefault(m.group(1), Host(m.group(1)))
            if " via " in line and (v := VIA.search(line)):
                target.transports[v.group(1)] += 1
            elif u := USING_NETWORK.search(line):
                target.transports[f"network {u.group(1)}"] += 1
        if "timing_s/step:" in line and (s := STEP_TIME.search(line)):
            h.step_times.append(float(s.group(1)))


def _text(path: Path) -> str:
    with path.open("rb") as f:
        return f.read(READ_LIMIT).decode("utf-8", errors="replace")


def from_host_dir(h: Host, folder: Path) -> None:
    """A host's own files: pip freeze, nvidia-smi, the GPU query CSV, dmesg, its logs."""
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        name = path.name
        if name in ("pip-freeze.txt", "packages.txt"):
            for line in _text(path).splitlines():
                if m := FREEZE.match(line.strip()):
                    h.packages[m.group(1).lower().replace("_", "-")] = m.group(2)
        elif name == "nvidia-smi.txt":
            text = _text(path)
            if m := DRIVER.search(text):
                h.driver = m.group(1)
            if m := CUDA.search(text):
                h.cuda = m.group(1) or m.group(2)
        elif name == "gpus.csv":
            _gpu_csv(h, _text(path))
        elif name == "dmesg.txt":
            for line in _text(path).splitlines():
                if "Xid" in line and (m := XID.search(line)):
                    h.xids[m.group(1)] += 1
        elif path.suffix in LOG_SUFFIXES:
            read_lines(h, _text(path).splitlines())


def _number(v: str) -> float | None:
    try:
        return float(v.strip().split()[0])
    except (ValueError, IndexError):
        return None


def _gpu_csv(h: Host, text: str) -> None:
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return
    head = [c.strip().split(" [")[0] for c in rows[0]]
    for row in rows[1:]:
        cell = dict(zip(head, row, strict=False))
        if (v := _number(cell.get("clocks.sm", cell.get("clocks.current.sm", "")))) is not None:
            h.clocks.append(v)
        if (v := _number(cell.get("clocks.max.sm", ""))) is not None:
            h.max_clocks.append(v)
        if (v := _number(cell.get("ecc.errors.uncorrected.volatile.total", ""))) is not None:
            h.ecc += int(v)


def _odd(values: dict[str, str], what: str, fid: str) -> NodeFinding | None:
    """All hosts but one agree: that one. Two hosts that differ: both."""
    present = {h: v for h, v in values.items() if v}
    if len(present) < 2 or len(set(present.values())) < 2:
        return None
    counts = Counter(present.values())
    (common, n), *rest = counts.most_common()
    if len(present) == 2:
        (a, va), (b, vb) = sorted(present.items())
        return NodeFinding(fid, (a, b), what, f"{what} differs between the two hosts: {a} has {va}, {b} has {vb}")
    if len(rest) == 1 and rest[0][1] == 1:
        odd = next(h for h, v in present.items() if v == rest[0][0])
        return NodeFinding(fid, (odd,), what, f"{odd} has {what} {rest[0][0]}; the other {n} host(s) have {common}")
    groups = "; ".join(
        f"{v}: {', '.join(sorted(h for h, x in present.items() if x == v))}" for v, _ in counts.most_common()
    )
    return NodeFinding(fid, tuple(sorted(present)), what, f"{what} differs across hosts ({groups})")


def compare(hosts: dict[str, Host]) -> list[NodeFinding]:
    """The properties where a host differs from its peers, errors first."""
    out: list[NodeFinding] = []
    for h in sorted(hosts.values(), key=lambda h: h.name):
        if h.xids:
            codes = ", ".join(f"Xid {c} x{n}" for c, n in sorted(h.xids.items()))
            out.append(
                NodeFinding(
                    "node-xid",
                    (h.name,),
                    "Xid errors",
                    f"{h.name} logged {codes} (dmesg): "
                    "a GPU or its link failed there; drain the node and run its GPU diagnostics",
                )
            )
        if h.ecc:
            out.append(
                NodeFinding(
                    "node-ecc",
                    (h.name,),
                    "uncorrected ECC errors",
                    f"{h.name} has {h.ecc} uncorrected ECC error(s): drain it and reset its GPUs",
                )
            )
    if len(hosts) < 2:
        return out
    names = sorted(hosts)
    for what, fid, get in (
        ("driver", "node-driver", lambda h: h.driver),
        ("CUDA", "node-cuda", lambda h: h.cuda),
        ("Python", "node-python", lambda h: h.python),
        ("GPU model", "node-gpu", lambda h: h.gpu),
        ("NCCL transport", "node-transport", lambda h: "+".join(sorted(h.transports))),
    ):
        if f := _odd({n: get(hosts[n]) for n in names}, what, fid):
            out.append(f)
    packages = sorted({p for h in hosts.values() for p in h.packages})
    for pkg in packages:
        if f := _odd({n: hosts[n].packages.get(pkg, "") for n in names}, f"{pkg}", "node-package"):
            out.append(f)
    out += _slower(hosts, "step time", "node-slow", lambda h: h.step_times, SLOW, "s")
    out += _slower(hosts, "GPU SM clock", "node-clock", lambda h: h.clocks, THROTTLED, "MHz")
    return out


def _slower(hosts: dict[str, Host], what: str, fid: str, get: Any, factor: float, unit: str) -> list[NodeFinding]:
    """A host whose median is ``factor`` times the others' (above for a time, below for a clock)."""
    medians = {n: statistics.median(v) for n, h in hosts.items() if (v := get(h))}
    if len(medians) < 3:
        return []
    out = []
    for n, m in sorted(medians.items()):
        others = statistics.median(v for k, v in medians.items() if k != n)
        if others <= 0:
            continue
        if (factor > 1 and m > factor * others) or (factor < 1 and m < factor * others):
            out.append(
                NodeFinding(
                    fid, (n,), what, f"{n}'s median {what} is {m:.3g} {unit}; the other hosts' {others:.3g} {unit}"
                )
            )
    return out


def read_run(run_dir: Path, trainer_lines: Iterable[str] = ()) -> dict[str, Host]:
    """Every host the run directory knows of, with what it says about each."""
    hosts: dict[str, Host] = {}
    validate = run_dir / "validate.json"
    if validate.is_file():
        try:
            doc = json.loads(validate.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            doc = None
        if isinstance(doc, dict):
            from_validate(doc, hosts)
    folder = run_dir / HOSTS
    if folder.is_dir():
        for sub in sorted(folder.iterdir()):
            if sub.is_dir() and not sub.is_symlink():
                from_host_dir(_host(hosts, sub.name), sub)
    by_prefix: dict[str, Host] = {}
    read_lines(Host("(trainer)"), trainer_lines, by_prefix)
    for name, seen in by_prefix.items():  # a hostname that is a host's label adds to it
        h = _host(hosts, name)
        h.transports.update(seen.transports)
    return hosts
