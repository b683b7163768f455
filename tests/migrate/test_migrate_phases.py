"""Where each host's time went: ``phases`` in --json, the plain progress lines, the host's figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from migrate_fixtures import Site
from migrate_helpers import make_repo

from patchctl.cli.main import cli
from patchctl.migrate.timing import PhaseClock


def test_json_and_plain_progress_say_where_each_host_spent_its_time(site: Site, tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "a = 1\n", "verl/b.py": "b = 2\n"})
    config = str(site.config(aliases=["node1", "node2"]))
    first = CliRunner().invoke(cli, ["migrate", "loop", "--target", str(tree), "--config", config, "--json"])
    assert first.exit_code == 0, first.output
    for h in json.loads(first.stdout)["hosts"]:
        assert set(h["phases"]) == {"fileset", "transfer", "verify", "render"}
        assert h["phases"]["fileset"] > 0 and h["phases"]["transfer"] > 0 and h["phases"]["verify"] > 0
        assert sum(h["phases"].values()) <= h["seconds"] + h["phases"]["fileset"]
    again = CliRunner().invoke(cli, ["migrate", "loop", "--target", str(tree), "--config", config, "--json"])
    for h in json.loads(again.stdout)["hosts"]:  # nothing to send: the host's seal settles it, no transfer
        assert (h["files_sent"], h["phases"]["transfer"], h["files_read"], h["sealed"]) == (0, 0, 0, True)
        # the wait for the host's answer once the source knew what to ask: 0 when its walk was done first
        assert 0 <= h["phases"]["verify"] < h["seconds"] and h["phases"]["fileset"] > 0
    plain = CliRunner().invoke(cli, ["migrate", "loop", "--target", str(tree), "--config", config])
    assert plain.exit_code == 0
    for host in ("node1", "node2"):
        line = next(ln for ln in plain.stdout.splitlines() if ln.startswith(f"{host}: done: "))
        assert line.startswith(f"{host}: done: file set ") and "s, transfer 0.00 s, verification " in line
        assert line.endswith(" s") and "rendering " in line


@pytest.mark.parametrize(
    ("reply", "render", "read"),
    [
        ({"render_seconds": 0.25, "read": 7}, 0.25, 7),
        ({"render_seconds": 5.0, "read": -1}, 0.0, 0),  # longer than the round trip; a negative count
        ({"render_seconds": "0.5", "read": "7"}, 0.0, 0),
        ({"render_seconds": -0.1, "read": True}, 0.0, 0),
        ({}, 0.0, 0),
    ],
)
def test_the_hosts_figures_are_taken_only_when_they_make_sense(
    reply: dict[str, object], render: float, read: int
) -> None:
    clock = PhaseClock(0.5)
    clock.checked(1.0, reply)
    phases = clock.phases()
    assert (phases.fileset, phases.render, phases.verify, clock.files_read) == (0.5, render, 1.0 - render, read)
