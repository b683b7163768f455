"""A transfer's live progress: a few updates, not one per file, and the last one the true total."""

from __future__ import annotations

import os
from pathlib import Path

from migrate_fixtures import Site
from migrate_helpers import make_repo

from patchctl.migrate import Options, migrate
from patchctl.migrate.results import Phase, Progress

FILES = {f"pkg/m{i:03d}.py": f"value = {i}\n" for i in range(300)}


def test_a_transfer_shows_its_total_at_the_end_without_an_event_per_file(site: Site, tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "a = 1\n", **FILES})
    events: list[Progress] = []
    (host,) = migrate(site.cluster(aliases=["node1"]), tree, (), Options(), events.append).hosts
    sending = [e for e in events if e.phase is Phase.TRANSFERRING]
    assert host.files_sent > len(FILES) and sending[-1].files == host.files_sent
    assert sending[-1].bytes == host.bytes_sent and len(sending) < len(FILES) // 10


def test_bytes_move_while_one_large_file_is_on_its_way(site: Site, tmp_path: Path) -> None:
    """Issue 39 req 6: rsync names a file only once it is whole, so a 400 MB file showed "0 B" for
    most of its transfer. rsync's running total (progress2) moves the figure in between; the last
    update is still the exact total."""
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "a = 1\n"})
    (tree / "big.bin").write_bytes(os.urandom(6 << 20))  # untracked, not ignored: migrate sends it
    events: list[Progress] = []
    cluster = site.cluster(extra="bwlimit = 2048\n", aliases=["node1"])  # KiB/s: about 3 s
    (host,) = migrate(cluster, tree, (), Options(), events.append).hosts
    assert host.status.passes, host.reason
    sending = [e.bytes for e in events if e.phase is Phase.TRANSFERRING]
    between = sorted({b for b in sending if 0 < b < 6 << 20})
    assert len(between) >= 2, sending  # before: 0 until the file was whole, then the total
    assert sending[-1] == host.bytes_sent >= 6 << 20
