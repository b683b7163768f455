"""Issue 37 req. 3: the odd node out of a multi-host run, named with what differs.

Each host of the run directory gets real files: the preflight rows of our two-node validation
(``docs/validation/multinode/two-nodes/validate.json``), ``nvidia-smi`` output, the GPU query CSV
and NCCL's INFO log of a real two-GPU run (``runs/h200-node``), and this interpreter's own
``pip freeze``. One host then gets the fault: another package version, NCCL over sockets (the real
log of that run), an Xid in its kernel log, another driver, slower steps.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from patchctl.doctor import load_signatures
from patchctl.doctor.nodes import compare, read_run
from patchctl.doctor.rundir import read

ROOT = Path(__file__).resolve().parents[2]
TWO = ROOT / "docs/validation/multinode/two-nodes/validate.json"
NODE = Path(__file__).parent / "runs" / "h200-node"
FREEZE = subprocess.run([sys.executable, "-m", "pip", "freeze"], capture_output=True, text=True, check=True).stdout
#: an Xid line as NVIDIA's Xid catalogue shows them (79: the GPU has fallen off the bus)
XID = "[ 8113.492305] NVRM: Xid (PCI:0000:3b:00): 79, pid=2231, name=python3, GPU has fallen off the bus.\n"


def _validate_doc(hosts: int) -> dict:
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


def _cluster(run: Path, hosts: int = 3, fault: str = "", on: str = "node2") -> Path:
    run.mkdir()
    (run / "validate.json").write_text(json.dumps(_validate_doc(hosts)), encoding="utf-8")
    for n in range(1, hosts + 1):
        name = f"node{n}"
        d = run / "hosts" / name
        d.mkdir(parents=True)
        odd = fault and name == on
        freeze = FREEZE
        if odd and fault == "package":
            freeze = "\n".join(
                ("pyyaml==5.4.1" if line.lower().startswith("pyyaml==") else line) for line in FREEZE.splitlines()
            )
        (d / "pip-freeze.txt").write_text(freeze, encoding="utf-8")
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


def _findings(run: Path) -> list:
    return compare(read_run(run))


def test_hosts_that_agree_give_no_finding(tmp_path):
    assert _findings(_cluster(tmp_path / "run")) == []


def test_a_host_with_another_package_version_is_named_with_both_versions(tmp_path):
    (f,) = _findings(_cluster(tmp_path / "run", fault="package"))
    assert f.id == "node-package" and f.hosts == ("node2",)
    assert f.text.startswith("node2 has pyyaml 5.4.1; the other 2 host(s) have ")


def test_a_host_whose_nccl_went_over_sockets_is_named(tmp_path):
    (f,) = _findings(_cluster(tmp_path / "run", fault="transport", on="node3"))
    assert f.id == "node-transport" and f.hosts == ("node3",)
    assert "NET/Socket" in f.text and "P2P/CUMEM" in f.text


def test_an_xid_in_a_hosts_kernel_log_is_named(tmp_path):
    (f,) = _findings(_cluster(tmp_path / "run", fault="xid", on="node1"))
    assert f.id == "node-xid" and f.hosts == ("node1",) and "Xid 79 x1" in f.text


def test_a_host_with_another_driver_is_named(tmp_path):
    (f,) = _findings(_cluster(tmp_path / "run", fault="driver"))
    assert (f.id, f.hosts) == ("node-driver", ("node2",))
    assert f.text == "node2 has driver 570.133.20; the other 2 host(s) have 580.159.04"


def test_a_host_with_slower_steps_is_named(tmp_path):
    (f,) = _findings(_cluster(tmp_path / "run", fault="slow", on="node3"))
    assert (f.id, f.hosts) == ("node-slow", ("node3",)) and "step time" in f.text


def test_of_two_hosts_that_differ_both_are_named(tmp_path):
    (f,) = _findings(_cluster(tmp_path / "run", hosts=2, fault="driver"))
    assert f.hosts == ("node1", "node2") and "differs between the two hosts" in f.text


@pytest.mark.parametrize("fault", ["package", "transport"])
def test_doctor_on_the_run_directory_prints_the_odd_host(tmp_path, fault):
    run = _cluster(tmp_path / "run", fault=fault)
    out = subprocess.run(
        [sys.executable, "-m", "patchctl", "doctor", str(run)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "hosts that differ from their peers (1):" in out.stdout and "node2 has" in out.stdout
    assert read(run, load_signatures()).nodes[0].hosts == ("node2",)
