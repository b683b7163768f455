"""A transfer's live progress: a few updates, not one per file, and the last one the true total."""

from __future__ import annotations

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
