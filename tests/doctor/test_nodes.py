"""Issue 37 req. 3: the odd node out of a multi-host run, named with what differs (the run
directories are built by ``faultruns.cluster``: real files per host, one fault planted in one)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from faultruns import cluster as _cluster

from patchctl.doctor import load_signatures
from patchctl.doctor.nodes import compare, read_run
from patchctl.doctor.rundir import read


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
