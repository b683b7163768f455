"""Whole migrates over real sshd hosts where seals settle a no-change re-run (migrate/seal.py on
the source, agent_seal on each host): nothing is sent or read, and any change on either side, on
one host or another, still reaches a full check."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from migrate_fixtures import Site
from migrate_helpers import make_repo
from test_migrate_hashcache import FILES, same_size_same_mtime

from patchctl.migrate import HostStatus, Options, migrate
from patchctl.remote import lock_agent

pytestmark = pytest.mark.usefixtures("rsync_installed")


def states(result: object) -> list[tuple[HostStatus, bool, int, int]]:
    """Per host: status, settled by its seal, files sent, files read."""
    return [(h.status, h.sealed, h.files_sent, h.files_read) for h in result.hosts]  # type: ignore[attr-defined]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    # untracked: git's status is the same after an edit, only the files' stats tell
    root = make_repo(tmp_path / "src", {"verl/__init__.py": "a = 1  # Uky\n"}, untracked=FILES)
    time.sleep(0.05)  # older than the first walk: the source's seal may be kept
    return root


def test_a_no_change_rerun_is_settled_by_the_seals_and_writes_nothing(site: Site, tree: Path) -> None:
    cluster = site.cluster(aliases=["node1", "node2"])
    first = migrate(cluster, tree, ())
    assert first.ok and not any(h.sealed for h in first.hosts)
    provenance = site.root("node1") / ".patchctl/provenance.json"
    before = provenance.read_bytes(), provenance.stat().st_mtime_ns
    again = migrate(cluster, tree, ())
    assert again.ok and again.files == first.files == len(FILES) + 1  # + verl/__init__.py
    assert states(again) == [(HostStatus.OK, True, 0, 0)] * 2
    assert all(h.verified for h in again.hosts)
    assert (provenance.read_bytes(), provenance.stat().st_mtime_ns) == before
    assert states(migrate(cluster, tree, ())) == [(HostStatus.OK, True, 0, 0)] * 2


def test_a_source_change_that_kept_size_and_mtime_reaches_every_host(site: Site, tree: Path) -> None:
    cluster = site.cluster(aliases=["node1", "node2"])
    assert migrate(cluster, tree, ()).ok
    assert states(migrate(cluster, tree, ()))[0][1]
    same_size_same_mtime(tree / "pkg/m2.py", "value = 7777\n")
    changed = migrate(cluster, tree, ())
    assert changed.ok and not any(h.sealed for h in changed.hosts)
    assert [(site.root(a) / "pkg/m2.py").read_text() for a in ("node1", "node2")] == ["value = 7777\n"] * 2
    time.sleep(0.05)
    assert [s[1] for s in states(migrate(cluster, tree, ()))] == [True, True]


def test_a_change_on_one_host_unseals_that_host_only(site: Site, tree: Path) -> None:
    cluster = site.cluster(aliases=["node1", "node2"])
    assert migrate(cluster, tree, ()).ok
    assert migrate(cluster, tree, ()).ok
    same_size_same_mtime(site.root("node1") / "pkg/m4.py", "value = 6666\n")
    node1, node2 = migrate(cluster, tree, ()).hosts
    assert (node1.status, node1.sealed, node1.repaired) == (
        HostStatus.REPAIRED,
        False,
        ("pkg/m4.py: content differs (sha256)",),
    )
    assert (node2.status, node2.sealed) == (HostStatus.OK, True)
    assert (site.root("node1") / "pkg/m4.py").read_text() == FILES["pkg/m4.py"]


def test_a_file_the_host_made_is_checked_once_then_sealed_with_it(site: Site, tree: Path) -> None:
    """A file the host made itself (an output beside the code) is no manifest entry, yet the seal
    covers every file of the walk (its tagged lines are the host's): the next run checks the host
    in full, and the seal written then holds the new file, so the run after is settled again."""
    cluster = site.cluster(aliases=["node1"])
    assert migrate(cluster, tree, ()).ok
    (site.root("node1") / "pkg/notes.txt").write_text("made here\n")
    assert states(migrate(cluster, tree, ())) == [(HostStatus.OK, False, 0, 0)]
    time.sleep(0.05)
    assert states(migrate(cluster, tree, ())) == [(HostStatus.OK, True, 0, 0)]


@pytest.mark.parametrize("options", [Options(checksum=True), Options(delete=True)], ids=["checksum", "delete"])
def test_checksum_and_delete_never_go_by_a_seal(site: Site, tree: Path, options: Options) -> None:
    cluster = site.cluster(aliases=["node1"])
    assert migrate(cluster, tree, ()).ok
    assert states(migrate(cluster, tree, ()))[0][1]
    (host,) = migrate(cluster, tree, (), options).hosts
    assert (host.status, host.sealed) == (HostStatus.OK, False)
    # --checksum: every file read again (in the check's prescan, which files_read counts too)
    assert host.files_read == (len(FILES) + 1 if options.checksum else 0)


def test_a_forged_host_seal_is_not_taken_for_a_verification(site: Site, tree: Path) -> None:
    """A seal copied from another tree (its digest, another tree's stats) settles nothing."""
    cluster = site.cluster(aliases=["node1", "node2"])
    assert migrate(cluster, tree, ()).ok
    assert migrate(cluster, tree, ()).ok
    one, two = (site.root(a) / ".patchctl/seal.json" for a in ("node1", "node2"))
    doc = json.loads(one.read_text())
    assert doc["verified"] != json.loads(two.read_text())["verified"]  # each host's own generated files
    two.write_text(json.dumps(dict(json.loads(two.read_text()), verified=doc["verified"])))
    one.write_text(json.dumps(dict(doc, tree="0" * 64)))
    assert [s[1] for s in states(migrate(cluster, tree, ()))] == [False, False]


def test_a_sealed_host_is_only_read_and_a_changed_one_waits_for_the_root(
    site: Site, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another migrate holds node1's root (the lock keeper's ``hold``, as its run would): a host
    the seals settle is only read, so it needs no lock and ends ok at once; once the tree changed,
    the host must be written and waits its turn, then names the holder."""
    cluster = site.cluster(aliases=["node1"])
    assert migrate(cluster, tree, ()).ok
    keeper = subprocess.Popen(
        [sys.executable, lock_agent.__file__, "hold"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert keeper.stdin is not None and keeper.stdout is not None
    keeper.stdin.write(f"{site.root('node1')}\x005\x00the other run\x00")  # root, wait, holder
    keeper.stdin.flush()
    assert keeper.stdout.readline() == "locked\n"
    monkeypatch.setenv("PATCHCTL_LOCK_WAIT", "1")
    try:
        assert states(migrate(cluster, tree, ())) == [(HostStatus.OK, True, 0, 0)]
        same_size_same_mtime(tree / "pkg/m2.py", "value = 7777\n")
        (host,) = migrate(cluster, tree, ()).hosts
        assert host.status is HostStatus.FAILED and "being migrated by another patchctl (the other run)" in host.reason
        assert (site.root("node1") / "pkg/m2.py").read_text() == FILES["pkg/m2.py"]  # nothing written meanwhile
    finally:
        keeper.stdin.close()
        keeper.wait(timeout=10)
    assert migrate(cluster, tree, ()).ok
    assert (site.root("node1") / "pkg/m2.py").read_text() == "value = 7777\n"
