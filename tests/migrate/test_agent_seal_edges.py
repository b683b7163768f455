"""The seal's edges: a racily clean file is confirmed by its bytes before it is sealed, and
``verify_remote.Agent.sealed`` reads the agent's early answer over a real ssh, leaving ``ask`` whole."""

from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import agent, entry
from migrate_fixtures import Site
from seal_helpers import RULE, keep_size_and_mtime, tree

from patchctl.migrate import agent_cache, agent_files, agent_seal, verify_remote
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


@pytest.mark.parametrize("clock", ["ctime only", "mtime only"])
def test_racy_means_a_ctime_or_an_mtime_not_older_than_the_finish(tmp_path: Path, clock: str) -> None:
    """rsync puts the source's mtime back (an old one), so only ctime may say a file is racy; a
    future mtime alone says so too. ``since`` is set exactly at the racy time: not older is racy."""
    request, written, path = _racy(tmp_path, "manifest")
    ctime = path.stat().st_ctime_ns
    if clock == "ctime only":
        os.utime(path, ns=(ctime, ctime - 3600 * 10**9))
        since = path.stat().st_ctime_ns
    else:
        os.utime(path, ns=(ctime, ctime + 3600 * 10**9))
        since = path.stat().st_mtime_ns
    stats = agent_files.survey(str(tmp_path))
    assert min(stats["pkg/a.py"].st_mtime_ns, stats["pkg/a.py"].st_ctime_ns) < since
    assert agent_seal.write_seal(str(tmp_path), request, stats, since, set(), written) is False


def _fresh(root: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """One file just written and verified as it is: the request and the walk of a finish."""
    (root / ".patchctl").mkdir()
    (root / "a.py").write_text("a = 1\n")
    request = {"manifest": [entry(root, "a.py")], "rendered": {}, "tags": TAGS, "seal_as": "S1"}
    return request, agent_files.survey(str(root))


@pytest.mark.parametrize("stands_still", [False, True])
def test_a_finish_waits_for_the_clock_to_pass_its_racy_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stands_still: bool
) -> None:
    """The file-system clock (fs_now) played here: at the racy file's time twice, then past it
    (sealed, after the third look), or never past it (no seal, after SETTLE seconds)."""
    request, stats = _fresh(tmp_path)
    last = stats["a.py"].st_ctime_ns
    looks: list[int] = []

    def clock(folder: str) -> int:
        looks.append(last)
        return last if stands_still or len(looks) < 3 else last + 1

    monkeypatch.setattr(agent_seal, "fs_now", clock)
    began = time.monotonic()
    assert agent_seal.write_seal(str(tmp_path), request, stats, 0, set(), {}) is not stands_still
    assert (tmp_path / ".patchctl/seal.json").exists() is not stands_still
    if stands_still:
        assert time.monotonic() - began >= agent_seal.SETTLE
    else:
        assert len(looks) == 3


def test_a_seal_past_its_size_limit_is_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    request, stats = _fresh(tmp_path)
    time.sleep(0.01)
    assert agent_seal.write_seal(str(tmp_path), request, stats, 0, set(), {}) is True
    size = (tmp_path / ".patchctl/seal.json").stat().st_size
    monkeypatch.setattr(agent_seal, "MAX_SEAL", size)  # exactly at the limit: written
    assert agent_seal.write_seal(str(tmp_path), request, stats, 0, set(), {}) is True
    (tmp_path / ".patchctl/seal.json").unlink()
    monkeypatch.setattr(agent_seal, "MAX_SEAL", size - 1)
    assert agent_seal.write_seal(str(tmp_path), request, stats, 0, set(), {}) is False
    assert not (tmp_path / ".patchctl/seal.json").exists()


@pytest.mark.parametrize("placed", [True, False])
def test_a_racy_data_file_is_confirmed_by_its_digest(tmp_path: Path, placed: bool) -> None:
    """A file over MAX_SCAN (no tagged lines) is hashed in chunks; one the source did not place
    is only its stat."""
    (tmp_path / ".patchctl").mkdir()
    data = tmp_path / "data.bin"
    data.write_bytes(b"a" * (agent_cache.MAX_SCAN + 1))
    verified = entry(tmp_path, "data.bin")
    keep_size_and_mtime(data, "b" * (agent_cache.MAX_SCAN + 1))
    request = {"manifest": [verified] if placed else [], "rendered": {}, "tags": TAGS, "seal_as": "S1"}
    stats = agent_files.survey(str(tmp_path))
    assert agent_seal.write_seal(str(tmp_path), request, stats, 0, set(), {}) is not placed
    request["manifest"] = [entry(tmp_path, "data.bin")]
    assert agent_seal.write_seal(str(tmp_path), request, stats, 0, set(), {}) is True


def test_a_racy_file_of_exactly_max_scan_bytes_is_confirmed_by_its_tagged_lines(tmp_path: Path) -> None:
    (tmp_path / ".patchctl").mkdir()
    line = b"x = 1  # Uky\n"
    (tmp_path / "big.py").write_bytes(line + b"#" * (agent_cache.MAX_SCAN - len(line) - 1) + b"\n")
    request = {"manifest": [], "rendered": {}, "tags": TAGS, "seal_as": "S1"}
    stats = agent_files.survey(str(tmp_path))
    assert agent_seal.write_seal(str(tmp_path), request, stats, 0, set(), {}) is False  # the verdict saw none
    assert agent_seal.write_seal(str(tmp_path), request, stats, 0, {("big.py", 1, "x = 1  # Uky")}, {}) is True


def test_a_racy_file_removed_after_the_walk_is_not_sealed(tmp_path: Path) -> None:
    request, stats = _fresh(tmp_path)
    (tmp_path / "a.py").unlink()
    assert agent_seal.write_seal(str(tmp_path), dict(request, manifest=[]), stats, 0, set(), {}) is False


def test_a_file_outside_the_walk_removed_after_the_verdict_is_not_sealed(tmp_path: Path) -> None:
    request, stats = _fresh(tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs/x").write_text("x")
    request["manifest"].append(entry(tmp_path, "logs/x"))  # not walked: a seal's extra
    (tmp_path / "logs/x").unlink()
    assert agent_seal.write_seal(str(tmp_path), request, stats, 0, set(), {}) is False


def test_a_racy_fifo_or_link_the_source_lacks_is_its_stat_alone(tmp_path: Path) -> None:
    request, _ = _fresh(tmp_path)
    os.mkfifo(tmp_path / "pipe")  # never opened: that would block
    (tmp_path / "link").symlink_to("a.py")
    stats = agent_files.survey(str(tmp_path))
    assert agent_seal.write_seal(str(tmp_path), request, stats, 0, set(), {}) is True


def test_a_racy_file_outside_the_walk_is_confirmed_by_its_digest_alone(tmp_path: Path) -> None:
    """Tagged lines in a skipped folder are none of the verdict's: only the digest is confirmed."""
    request, stats = _fresh(tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs/x.py").write_text("y = 1  # Uky\n")
    request["manifest"].append(entry(tmp_path, "logs/x.py"))
    assert agent_seal.write_seal(str(tmp_path), request, stats, 0, set(), {}) is True


def test_a_racy_link_is_confirmed_by_its_target(tmp_path: Path) -> None:
    (tmp_path / ".patchctl").mkdir()
    (tmp_path / "l").symlink_to("b")  # the verdict read "a" there: the link was replaced since
    request = {"manifest": [["l", "l", "a", False]], "rendered": {}, "tags": TAGS, "seal_as": "S1"}
    stats = agent_files.survey(str(tmp_path))
    assert agent_seal.write_seal(str(tmp_path), request, stats, 0, set(), {}) is False
    request["manifest"] = [["l", "l", "b", False]]
    assert agent_seal.write_seal(str(tmp_path), request, stats, 0, set(), {}) is True


def test_a_racy_file_whose_stat_moved_after_the_walk_is_not_sealed(tmp_path: Path) -> None:
    """The same bytes written again after the walk: what the walk saw is gone, so is the seal."""
    request, stats = _fresh(tmp_path)
    (tmp_path / "a.py").write_text("a = 1\n")
    assert agent_seal.write_seal(str(tmp_path), request, stats, 0, set(), {}) is False
    assert agent_seal.write_seal(str(tmp_path), request, agent_files.survey(str(tmp_path)), 0, set(), {}) is True


def test_a_folder_in_the_seals_place_fails_no_finish(tmp_path: Path) -> None:
    request = tree(tmp_path)
    agent(request)
    (tmp_path / ".patchctl/seal.json").unlink()
    (tmp_path / ".patchctl/seal.json").mkdir()
    reply = agent(request)
    assert (reply.get("error"), reply["problems"], reply["sealed"]) == (None, [], False)
    assert (tmp_path / ".patchctl/seal.json").is_dir()


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
