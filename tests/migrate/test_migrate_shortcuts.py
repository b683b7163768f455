"""The shortcuts of issue 23 keep every guarantee: the source is walked once (its tag inventory
comes from the hash cache, never stale), the source check still sees every patch, and a first
transfer starts while the source is still hashed, verified all the same."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from migrate_fixtures import Site
from migrate_helpers import make_repo
from test_migrate_fileset import cluster
from test_migrate_hashcache import same_size_same_mtime
from test_migrate_source import _hand_edit

from patchctl.migrate import HostStatus, fileset, hashcache, migrate, state, transfer, verify_remote
from patchctl.migrate.source import check
from patchctl.patchsets.loader import load_patchsets
from patchctl.target import open_tree
from patchctl.verify.patches import verify


def inventory(root: Path) -> list[list[Any]]:
    """The tagged lines migrate expects on every host, as prepare lists them: from the source's
    hash cache, saved for the next run."""
    rule = verify_remote.tag_rule({"Uky"})
    cache = hashcache.load(root, rule, True)
    fs = fileset.collect(root, cluster(), (), cache)
    expected: list[list[Any]] = verify_remote.tags_request(fs, rule, (), cache)["expected"]
    hashcache.save(root, cache)
    return expected


def test_a_tagged_line_added_with_size_and_mtime_kept_reaches_the_inventory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state, "state_dir", lambda: tmp_path / "state")
    root = make_repo(tmp_path / "src", {"a.py": "x = 1  # Note\n", "b.py": "y = 2  # Uky\n"})
    time.sleep(0.05)  # older than the pass: remembered
    assert inventory(root) == [["b.py", 1, "y = 2  # Uky"]]
    assert hashcache.cache_file(root).is_file()
    same_size_same_mtime(root / "a.py", "x = 1  # Uky \n")
    assert inventory(root) == [["a.py", 1, "x = 1  # Uky"], ["b.py", 1, "y = 2  # Uky"]]


def test_the_source_check_sees_every_patch_without_the_walk(verl_tree: Path) -> None:
    patch = _hand_edit(verl_tree)
    tree, sets = open_tree(verl_tree), load_patchsets(["uky"])
    full, quick = verify(tree, sets), verify(tree, sets, inventory=False)
    assert [(c.patch, c.status) for c in quick.checks] == [(c.patch, c.status) for c in full.checks]
    assert full.accounted and not quick.accounted  # the walk is what was left out
    source = check(tree, sets)
    assert not source.ok and source.patched and source.problems == (f"{patch} modified",)


@pytest.mark.usefixtures("rsync_installed")
def test_a_first_transfer_starts_before_the_source_is_hashed(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source's hashing waits until a host's rsync has started: a run that waited for the
    hashes before sending would stall here and fail. The host still ends verified."""
    root = make_repo(tmp_path / "src", {"verl/__init__.py": "", **{f"pkg/m{i}.py": f"v = {i}\n" for i in range(5)}})
    started = threading.Event()
    real_send, real_hashed = transfer.send, fileset._hashed
    waited: list[bool] = []

    def send(*args: Any, **kwargs: Any) -> transfer.TransferResult:
        started.set()
        return real_send(*args, **kwargs)

    def hashed(*args: Any) -> list[fileset.Entry]:
        waited.append(started.wait(20))
        return real_hashed(*args)

    monkeypatch.setattr(transfer, "send", send)
    monkeypatch.setattr(fileset, "_hashed", hashed)
    (host,) = migrate(site.cluster(aliases=["node1"]), root, ()).hosts
    assert waited == [True]
    assert host.status is HostStatus.OK and host.verified and host.files_sent == 6
