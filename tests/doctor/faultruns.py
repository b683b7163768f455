"""Run directories of a three-host cluster with one fault planted in one host (issue 37 req. 3 and 6):
shared by test_nodes.py and benchmarks/bench_doctor.py's fault-injection set.

Each host gets real files: the preflight rows of our two-node validation
(``docs/validation/multinode/two-nodes/validate.json``), ``nvidia-smi`` output, the GPU query CSV and
NCCL's INFO log of a real two-GPU run (``runs/h200-node``), and this interpreter's own ``pip
freeze``. One host then gets the fault: another package version, NCCL over sockets (the real log
of that run), an Xid in its kernel log, another driver, slower steps.
"""

from __future__ import annotations

import copy
import functools
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TWO = ROOT / "docs/validation/multinode/two-nodes/validate.json"
NODE = Path(__file__).parent / "runs" / "h200-node"


@functools.cache
def freeze() -> str:
    """This interpreter's ``pip freeze``: a real package list for every host."""
    return subprocess.run([sys.executable, "-m", "pip", "freeze"], capture_output=True, text=True, check=True).stdout


#: an Xid line as NVIDIA's Xid catalogue shows them (79: the GPU has fallen off the bus)
XID = "[ 8113.492305] NVRM: Xid (PCI:0000:3b:00): 79, pid=2231, name=python3, GPU has fallen off the bus.\n"


def validate_doc(hosts: int) -> dict:
    doc = json.loads(TWO.read_text(encoding="utf-8"))
    out = {"preflight": doc["preflight"][:2], "ray": copy.deepcopy(doc["ray"])}
    for n in range(3, hosts + 1):  # a third host like the second
        pre = copy.deepcopy(doc["preflight"][1])
        pre["label"] = f"node{n}"
        node = copy.deepcopy(doc["ray"]["nodes"][1])
        node.update(label=f"node{n}", address=f"127.0.0.{n + 1}")
        out["preflight"].append(pre)
        out["ray"]["nodes"].append(node)
    return out


def cluster(run: Path, hosts: int = 3, fault: str = "", on: str = "node2") -> Path:
    run.mkdir()
    (run / "validate.json").write_text(json.dumps(validate_doc(hosts)), encoding="utf-8")
    for n in range(1, hosts + 1):
        name = f"node{n}"
        d = run / "hosts" / name
        d.mkdir(parents=True)
        odd = fault and name == on
        listed = freeze()
        if odd and fault == "package":
            listed = "\n".join(
                ("pyyaml==5.4.1" if line.lower().startswith("pyyaml==") else line) for line in listed.splitlines()
            )
        (d / "pip-freeze.txt").write_text(listed, encoding="utf-8")
        smi = (NODE / "nvidia-smi.txt").read_text(encoding="utf-8")
        if odd and fault == "driver":
            smi = smi.replace("Driver Version: 580.159.04", "Driver Version: 570.133.20")
        (d / "nvidia-smi.txt").write_text(smi, encoding="utf-8")
        (d / "gpus.csv").write_text((NODE / "gpus.csv").read_text(encoding="utf-8"), encoding="utf-8")
        log = "nccl-socket-rank0.log" if odd and fault == "transport" else "nccl-p2p-rank0.log"
        steps = "".join(
            f"step:{s} - timing_s/step:{(9.5 if odd and fault == 'slow' else 4.0) + s * 0.01:.2f}\n" for s in range(8)
        )
        (d / "worker.log").write_text((NODE / log).read_text(encoding="utf-8") + steps, encoding="utf-8")
        (d / "dmesg.txt").write_text(XID if odd and fault == "xid" else "", encoding="utf-8")
    return run
