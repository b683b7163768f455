"""The seal's edges: a racily clean file is confirmed by its bytes before it is sealed, and
``verify_remote.Agent.sealed`` reads the agent's early answer over a real ssh, leaving ``ask`` whole."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import agent, entry
from migrate_fixtures import Site
from seal_helpers import RULE, keep_size_and_mtime, tree

from patchctl.migrate import agent_files, agent_seal, verify_remote
from patchctl.migrate.verify_remote import Agent

TAGS = {"pattern": RULE[0], "needles": RULE[1], "expected": []}


def _racy(root: Path, kind: str) -> tuple[dict[str, Any], dict[str, bytes], Path]:
    """A file that a finish's verdict read as ``value = 1`` and that then changed within the same
    clock tick, keeping every stat field (here the mtime is put back and the walk is taken after
    the change: the tick would have kept them all), but not its bytes. The request and the records
    the finish had, and the file."""
    (root / ".patchctl").mkdir()
    path = root / (".patchctl/manifest.json" if kind == "record" else "pkg/a.py")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("value = 1\n")
    manifest = [entry(root, "pkg/a.py")] if kind == "manifest" else []
    written = {".patchctl/manifest.json": b"value = 1\n"} if kind == "record" else {}
    keep_size_and_mtime(path, "x=1 # Uky\n" if kind == "tags" else "value = 2\n")
    return {"manifest": manifest, "rendered": {}, "tags": TAGS, "seal_as": "S1"}, written, path


@pytest.mark.parametrize("kind", ["manifest", "tags", "record"])
def test_a_racy_file_changed_with_its_stat_kept_is_never_sealed(tmp_path: Path, kind: str) -> None:
    """``since`` 0: the finish began before every file's last change, so all of them are racy."""
    request, written, path = _racy(tmp_path, kind)
    stats = agent_files.survey(str(tmp_path))
    assert agent_seal.write_seal(str(tmp_path), request, stats, 0, set(), written) is False
    assert not (tmp_path / ".patchctl/seal.json").exists()
    # the control: a verdict that read what the file holds now is sealed
    if kind == "manifest":
        request["manifest"] = [entry(tmp_path, "pkg/a.py")]
    here = {("pkg/a.py", 1, "x=1 # Uky")} if kind == "tags" else set()
    written = {rel: path.read_bytes() for rel in written}
    assert agent_seal.write_seal(str(tmp_path), request, stats, 0, here, written) is True


def _program(code: str) -> str:
    return base64.b64encode(code.encode()).decode()


@pytest.fixture
def host(site: Site) -> tuple[Any, Any, Path]:
    cluster = site.cluster(aliases=["node1"])
    root = site.root("node1")
    root.mkdir(parents=True)
    return cluster, cluster.hosts[0], root


PRESCAN = {"rule": RULE, "rehash": False, "seal": True}


def test_agent_sealed_answers_over_ssh_and_ask_still_works(host: tuple[Any, Any, Path]) -> None:
    cluster, node, root = host
    request = tree(root)
    agent(request)  # the host's first verified finish: sealed as S1
    with Agent(cluster, node, prescan=PRESCAN) as a:
        assert a.sealed(30) == "S1"
    with Agent(cluster, node, prescan=PRESCAN) as a:
        assert (a.sealed(30), a.sealed(30)) == ("S1", None)  # one line, read once
        reply = a.ask(request, 60)
        assert (reply.failure, reply.data["problems"], reply.data["sealed"]) == (None, [], True)
    with Agent(cluster, node, prescan=PRESCAN) as a:  # never read: ask() reads past the early line
        assert a.ask(request, 60).data["sealed"] is True
    with Agent(cluster, node, prescan=dict(PRESCAN, seal=False)) as a:
        began = time.monotonic()
        assert a.sealed(30) is None and time.monotonic() - began < 1  # not asked: nothing to wait for
        assert a.ask(request, 60).data["problems"] == []
    keep_size_and_mtime(root / "pkg/m1.py", "value = 6666\n")
    with Agent(cluster, node, prescan=PRESCAN) as a:
        assert a.sealed(30) is None
        assert a.ask(request, 60).data["problems"] == [["pkg/m1.py", "content differs (sha256)"]]


@pytest.mark.parametrize(
    ("code", "timeout"),
    [
        ("import sys; sys.stdout.write('garbage\\n'); sys.stdout.flush(); sys.stdin.read()", 30),
        ("import sys; sys.stdout.write('[1]\\n'); sys.stdout.flush(); sys.stdin.read()", 30),
        ("import sys; sys.stdin.read()", 0.5),  # no line in time
        ("pass", 30),  # EOF
    ],
)
def test_agent_sealed_is_none_on_garbage_timeout_or_eof(
    host: tuple[Any, Any, Path], monkeypatch: pytest.MonkeyPatch, code: str, timeout: float
) -> None:
    cluster, node, _ = host
    monkeypatch.setattr(verify_remote, "_agent_b64", lambda: _program(code))
    with Agent(cluster, node, prescan=PRESCAN) as a:
        began = time.monotonic()
        assert a.sealed(timeout) is None
        assert time.monotonic() - began < timeout + 5


def test_a_line_half_read_at_the_timeout_is_skipped_by_ask(
    host: tuple[Any, Any, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster, node, _ = host
    code = (
        'import sys, json; sys.stdout.write(\'{"sealed": "X\'); sys.stdout.flush(); sys.stdin.read(); '
        "sys.stdout.write('\"}\\n' + json.dumps({'problems': []}))"
    )
    monkeypatch.setattr(verify_remote, "_agent_b64", lambda: _program(code))
    with Agent(cluster, node, prescan=PRESCAN) as a:
        assert a.sealed(1) is None
        reply = a.ask({"action": "finish"}, 30)
    assert (reply.failure, reply.data) == (None, {"problems": []})
    assert json.loads(json.dumps(reply.data)) == {"problems": []}
