"""The host agent's one walk (``agent_files.survey``) and its quiet re-run: the shortcuts that made
a no-change check cheaper must never hide a change, reach outside the root, or forget a hash."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest
from agent_helpers import agent, entry, req

from patchctl.migrate import agent_cache

FILES = {"pkg/a.py": "a = 1\n", "pkg/b.py": "b = 2\n", "logs/kept.py": "k = 3\n"}


def aged(root: Path, files: dict[str, str]) -> list[list[object]]:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    time.sleep(0.05)  # past the file-system clock's tick: remembered from the first run on
    return [entry(root, rel) for rel in files]


def test_a_sent_file_in_a_folder_the_walk_leaves_out_is_still_checked(tmp_path: Path) -> None:
    """``logs/`` is not walked (a host's own outputs), yet a file migrate sent there is checked."""
    manifest = aged(tmp_path, FILES)
    assert agent(req(tmp_path, "finish", manifest))["problems"] == []
    (tmp_path / "logs/kept.py").write_text("k = 4\n")
    (tmp_path / "pkg/b.py").unlink()
    reply = agent(req(tmp_path, "finish", manifest))
    assert reply["problems"] == [["pkg/b.py", "missing"], ["logs/kept.py", "content differs (sha256)"]]


def test_a_folder_linked_out_of_the_root_is_neither_walked_nor_trusted(tmp_path: Path) -> None:
    """A file reached through a link to a folder outside is an unsafe path, even with the content
    the source expects, and its tagged lines are not the host's."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    manifest = aged(root, {"pkg/a.py": "a = 1\n"})
    outside.mkdir()
    (outside / "x.py").write_text("x = 1  # Uky\n")
    os.symlink(outside, root / "ln")
    wanted = ["ln/x.py", "f", hashlib.sha256(b"x = 1  # Uky\n").hexdigest(), False]
    reply = agent(req(root, "finish", [*manifest, wanted]))
    assert reply["problems"] == [["ln/x.py", "unsafe path"]] and reply["tags_only_here"] == []


def test_a_hash_filled_into_a_remembered_record_is_remembered(tmp_path: Path) -> None:
    """A file the host had (tag-scanned, never hashed) that a later manifest names is hashed once:
    the record the hash is filled into is a copy, so the cache sees it as new and keeps it."""
    manifest = aged(tmp_path, FILES)[:2]
    agent(req(tmp_path, "finish", manifest[:1]))  # pkg/b.py walked for tags only: no sha256 yet
    assert agent(req(tmp_path, "finish", manifest))["read"] == 1  # the hash is all that is new
    assert agent(req(tmp_path, "finish", manifest))["read"] == 0


def _records(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for name in ("manifest.json", "provenance.json", "hashes.json"):
        st = (root / ".patchctl" / name).stat()
        out[name] = (st.st_ino, st.st_mtime_ns)
    return out


def test_a_no_change_re_run_rewrites_no_record_and_a_change_rewrites_them(tmp_path: Path) -> None:
    manifest = aged(tmp_path, FILES)
    provenance = {"commit": "abc", "migrated_at": "2026-11-24T10:00:00+00:00"}
    agent(req(tmp_path, "finish", manifest, provenance=provenance))
    time.sleep(0.05)
    agent(req(tmp_path, "finish", manifest, provenance=provenance))  # remembers what aged since
    before = _records(tmp_path)
    later = dict(provenance, migrated_at="2026-11-24T11:00:00+00:00")
    assert agent(req(tmp_path, "finish", manifest, provenance=later))["problems"] == []
    assert _records(tmp_path) == before
    kept = json.loads((tmp_path / ".patchctl/provenance.json").read_text())
    assert kept["migrated_at"] == "2026-11-24T10:00:00+00:00" and kept["verified"] is True

    (tmp_path / "pkg/new.py").write_text("n = 5\n")
    newer = dict(later, commit="def")
    agent(req(tmp_path, "finish", [*manifest, entry(tmp_path, "pkg/new.py")], provenance=newer))
    after = _records(tmp_path)
    assert all(after[name] != before[name] for name in before)
    assert json.loads((tmp_path / ".patchctl/provenance.json").read_text())["commit"] == "def"
    assert "pkg/new.py" in json.loads((tmp_path / ".patchctl/manifest.json").read_text())["files"]


def test_a_file_read_for_its_digest_gives_its_tagged_lines_from_the_same_read(tmp_path: Path) -> None:
    """A first check reads each small file once, for its sha256 and its tagged lines together; a
    file above the scan limit is hashed and never scanned, as the tag walk leaves it."""
    big = "# Uky\n" + "#" * (4 << 20)
    manifest = aged(tmp_path, {"a.py": "import os\nx = 1  # Uky\n", "b.py": "y = 2  # Note\n", "big.py": big})
    expected = [["a.py", 2, "x = 1  # Uky"]]
    tags = {"pattern": r"#\s*(Uky)\b", "needles": ["Uky"], "expected": expected}
    reply = agent(req(tmp_path, "finish", manifest, tags=tags))
    assert (reply["problems"], reply["tags_only_here"], reply["tags_missing_here"], reply["read"]) == ([], [], [], 3)
    kept = json.loads((tmp_path / ".patchctl/hashes.json").read_text())["files"]
    assert (kept["a.py"][5], kept["b.py"][5], kept["big.py"][5]) == ([[2, "x = 1  # Uky"]], [], None)


def test_a_record_is_remembered_only_when_both_its_times_are_older_than_the_pass(tmp_path: Path) -> None:
    """ctime and mtime each count alone: a file whose mtime was put back but whose ctime is in the
    pass's tick, or whose mtime is in that tick (set ahead) with an older ctime, is not kept."""
    path = tmp_path / "f"
    path.write_text("a")
    os.utime(path, ns=(0, 1_000_000_000))  # mtime long ago; ctime: now
    back = path.stat()
    assert back.st_mtime_ns < back.st_ctime_ns
    os.utime(tmp_path / "f", ns=(0, back.st_ctime_ns + 10**9))  # mtime ahead of the ctime it leaves
    ahead = path.stat()
    assert ahead.st_ctime_ns < ahead.st_mtime_ns
    for st, since, kept in [
        (back, back.st_ctime_ns, False),
        (back, back.st_ctime_ns + 1, True),
        (ahead, ahead.st_mtime_ns, False),
        (ahead, ahead.st_mtime_ns + 1, True),
    ]:
        cache = agent_cache.Cache({}, None, since)
        cache.digest("f", str(path), st)
        assert ("f" in cache.document()["files"]) is kept


def test_a_provenance_linked_elsewhere_is_neither_read_nor_written_through(tmp_path: Path) -> None:
    root = tmp_path / "root"
    manifest = aged(root, {"pkg/a.py": "a = 1\n"})
    provenance = {"commit": "abc", "migrated_at": "2026-11-24T10:00:00+00:00"}
    agent(req(root, "finish", manifest, provenance=provenance))
    kept = root / ".patchctl/provenance.json"
    outside = tmp_path / "outside.json"
    outside.write_text(kept.read_text().replace("10:00:00", "09:00:00"))  # the same tree, an older time
    before = outside.read_text()
    kept.unlink()
    kept.symlink_to(outside)
    agent(req(root, "finish", manifest, provenance=provenance))
    assert not kept.is_symlink() and json.loads(kept.read_text())["migrated_at"] == "2026-11-24T10:00:00+00:00"
    assert outside.read_text() == before


@pytest.mark.parametrize("record", [".patchctl/manifest.json", ".patchctl/provenance.json"])
def test_a_record_that_is_a_fifo_neither_blocks_the_agent_nor_stays(tmp_path: Path, record: str) -> None:
    """The host's records are read back before they are rewritten (a no-change re-run writes
    nothing): a FIFO in their place (the host's file: anything may be there) must not hang the
    agent until migrate's timeout, and is replaced by the record."""
    root = tmp_path / "root"
    manifest = aged(root, {"pkg/a.py": "a = 1\n"})
    agent(req(root, "finish", manifest))
    fifo = root / record
    fifo.unlink()
    os.mkfifo(fifo)
    reply = agent(req(root, "finish", manifest), timeout=30)
    assert reply["problems"] == [] and fifo.is_file()
