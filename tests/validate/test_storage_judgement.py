"""How validate judges each directory's storage measurement (validate/checks/storage.py).

Issue 41's second audit planted one-line bugs in the storage check's judgement that the health
tests let pass: a speed exactly on a bar counted as below it, the time bound's note dropped, a
shared directory's row or a host's error row mislabelled, the checkpoint directory's default. The
rows are judged from what a host reports (host/storage.py's reply), on a plan made from a real
cluster config; one run on the loopback hosts covers a directory the hosts cannot write in.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from validate_helpers import Site, host_entry, two_host_plan

from patchctl.clusters import load_cluster
from patchctl.validate import plan as planning
from patchctl.validate.checks import storage


def make_plan(tmp_path: Path, extra: str = "") -> planning.Plan:
    bars = "[clusters.c.health]\nstorage_warn_mbps = 500\nstorage_fail_mbps = 100\n"
    return two_host_plan(tmp_path, "health", bars + extra)


def measured(write: float, read: float, **more: Any) -> dict[str, Any]:
    return {"write_mbps": write, "read_mbps": read, "checksum_ok": True, "bytes": 1 << 30, "method": "python", **more}


@pytest.mark.parametrize(
    ("write", "read", "status", "note"),
    [
        (900.0, 99.9, "fail", "below 100 MB/s (storage_fail_mbps)"),  # the slower direction decides
        (99.9, 900.0, "fail", "below 100 MB/s (storage_fail_mbps)"),
        (900.0, 100.0, "warn", "below 500 MB/s (storage_warn_mbps)"),  # on the fail bar is not below it
        (499.9, 900.0, "warn", "below 500 MB/s (storage_warn_mbps)"),
        (900.0, 500.0, "pass", ""),  # on the warn bar is not below it
    ],
)
def test_the_slower_direction_is_judged_against_the_bars(
    tmp_path: Path, write: float, read: float, status: str, note: str
) -> None:
    plan = make_plan(tmp_path)
    row = storage._judge(plan, plan.nodes[0], "tree", measured(write, read))
    assert (row.host, row.dir, row.path, row.status, row.note) == ("a", "tree", "/srv/verl", status, note)
    assert (row.write_mbps, row.read_mbps, row.bytes, row.method) == (write, read, 1 << 30, "python")


def test_speeds_are_shown_to_a_tenth(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    row = storage._judge(plan, plan.nodes[0], "tree", measured(1234.567, 876.543))
    assert (row.write_mbps, row.read_mbps) == (1234.6, 876.5)


def test_data_that_changed_on_disk_fails_whatever_the_speed(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    row = storage._judge(plan, plan.nodes[0], "tree", measured(900.0, 900.0, checksum_ok=False))
    assert (row.status, row.note) == ("fail", "the data read back differs from what was written (sha256)")


@pytest.mark.parametrize(("speed", "note"), [(900.0, ""), (50.0, "below 100 MB/s (storage_fail_mbps); ")])
def test_a_measurement_cut_by_its_time_bound_says_so(tmp_path: Path, speed: float, note: str) -> None:
    plan = make_plan(tmp_path)
    row = storage._judge(plan, plan.nodes[0], "tree", measured(speed, speed, partial=True, bytes=1 << 20))
    assert row.note == note + "stopped at 1048576 bytes (time bound)"
    assert row.bytes == 1 << 20


def test_a_directory_another_host_measured_is_shown_as_shared(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, extra='checkpoint_dir = "/shared/ckpt"\n')
    row = storage._judge(plan, plan.nodes[1], "checkpoint", {"tested_by": 0, "shared_with": [0, 1]})
    assert (row.host, row.path, row.status, row.shared_with) == ("b", "/shared/ckpt", "shared", ("a", "b"))
    assert row.note == "the same directory as on a, measured there"
    assert (row.write_mbps, row.read_mbps, row.bytes) == (None, None, 0)


def test_a_host_that_could_not_measure_fails_with_its_reason(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    row = storage._judge(plan, plan.nodes[1], "tree", {"error": "only 0.1 GB free, the probe needs 1.1 GB"})
    assert (row.host, row.status, row.note, row.bytes) == ("b", "fail", "only 0.1 GB free, the probe needs 1.1 GB", 0)


def test_the_directories_measured(tmp_path: Path) -> None:
    plan = make_plan(tmp_path)
    assert storage.dirs(plan, plan.nodes[0]) == {"tree": "/srv/verl", "checkpoint": "/srv/verl/checkpoints"}
    cfg = tmp_path / "patchctl.toml"
    cfg.write_text(
        cfg.read_text().replace("[clusters.c.health]", '[clusters.c.paths]\nDATA_DIR = "/data"\n[clusters.c.health]')
        + 'checkpoint_dir = "/scratch/ckpt"\n'
    )
    plan = planning.make(load_cluster("c", cfg), planning.Options("health"), cwd=tmp_path)
    assert storage.dirs(plan, plan.nodes[0]) == {"tree": "/srv/verl", "data": "/data", "checkpoint": "/scratch/ckpt"}


SMALL = "[clusters.loop.health]\nstorage_bytes = 1048576\nstorage_warn_mbps = 1\nstorage_fail_mbps = 1\n"


def probes_left(site: Site) -> list[str]:
    """What the storage check left in the hosts' directories (tree, checkpoints, data)."""
    return sorted(str(p.relative_to(site.dir)) for p in site.dir.rglob(".patchctl-health*"))


def storage_run(site: Site, data: Path) -> tuple[int, str]:
    hosts = [host_entry(a, site.root(a), None, gpus=0) for a in ("node1", "node2")]
    site.migrate(site.cluster(hosts, extra=SMALL))
    site.config(hosts, extra=f'[clusters.loop.paths]\nDATA_DIR = "{data}"\n' + SMALL)
    done = site.validate("--profile", "health", "--checks", "storage", "--out", str(site.dir / "run"))
    return done.exit_code, done.output


def test_a_storage_run_leaves_nothing_in_the_directories_it_measured(site: Site) -> None:
    (site.dir / "data").mkdir()
    code, output = storage_run(site, site.dir / "data")
    assert code == 0, output
    assert probes_left(site) == []


def test_a_data_directory_missing_on_the_hosts_stops_the_run_naming_it_and_leaves_nothing(site: Site) -> None:
    """The hosts marked their tree and checkpoint directories before the missing data directory
    was found: those markers are taken away too."""
    missing = site.dir / "no-data"
    code, output = storage_run(site, missing)
    assert code == 1, output
    last = output.strip().splitlines()[-1]
    assert last.startswith("validate: FAIL — node1: storage check failed: cannot write in the data directory ("), last
    assert str(missing) in last and not missing.exists()
    assert probes_left(site) == []


def test_a_host_whose_storage_side_fails_is_named_with_its_message(site: Site) -> None:
    """The hosts' python runs every action but storage, which ends with exit 7 and a message."""
    wrapper = site.dir / "python3"
    wrapper.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" storage "*) echo "storage side: disk quota exceeded" >&2; exit 7;; esac\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    wrapper.chmod(0o755)
    (site.dir / "data").mkdir()
    hosts = [host_entry(a, site.root(a), None, gpus=0) for a in ("node1", "node2")]
    site.migrate(site.cluster(hosts, extra=SMALL))
    config = site.config(hosts, extra=f'[clusters.loop.paths]\nDATA_DIR = "{site.dir / "data"}"\n' + SMALL)
    config.write_text(config.read_text().replace(f'python = "{sys.executable}"', f'python = "{wrapper}"'))
    done = site.validate("--profile", "health", "--checks", "storage", "--out", str(site.dir / "run"))
    assert done.exit_code == 1, done.output
    assert done.output.strip().splitlines()[-1] == (
        "validate: FAIL — node1: storage check failed: the host side exited with 7: storage side: disk quota "
        "exceeded; see the host's message above"
    )
