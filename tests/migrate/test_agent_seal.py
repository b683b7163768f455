"""The host's seal (agent_seal): a verified finish seals the tree's stat state, and the next prescan
that asks answers the sealed digest only while one fresh walk finds exactly that state."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from agent_helpers import agent
from seal_helpers import keep_size_and_mtime, sealed, start, tree

from patchctl.migrate import agent_seal, verify_remote


def test_a_verified_finish_seals_and_the_next_prescan_answers_its_digest(tmp_path: Path) -> None:
    request = tree(tmp_path)
    reply = agent(request)
    assert (reply["problems"], reply["tags_missing_here"], reply["sealed"]) == ([], [], True)
    seal = json.loads((tmp_path / ".patchctl/seal.json").read_text())
    assert (seal["format"], seal["verified"], len(seal["tree"])) == (1, "S1", 64)
    # the paths the walk leaves out but the verdict read: the skipped folder's file, the generated
    # file, the two records
    assert seal["extra"] == [".patchctl/manifest.json", ".patchctl/provenance.json", "gen/cfg.py", "logs/run.txt"]
    assert sealed(tmp_path) == "S1"
    assert sealed(tmp_path) == "S1"  # answering read nothing and wrote nothing that is sealed


def test_the_first_finish_of_a_fresh_tree_seals_it(tmp_path: Path) -> None:
    """Files written just now and records written by the finish itself are racily clean: the finish
    waits for the clock's tick to pass and confirms them, so the first no-change re-run is sealed."""
    request = tree(tmp_path, age=False)
    assert agent(request)["sealed"] is True
    assert sealed(tmp_path) == "S1"


def test_a_file_dated_past_2262_is_sealed_and_its_change_still_seen(tmp_path: Path) -> None:
    """``utime`` can date a file 2286 (10**19 ns, past 64 bits of nanoseconds): the finish still
    seals the tree instead of failing the host, and an edit of that file that puts the same far
    date back still unseals it (its ctime moved)."""
    request = tree(tmp_path)
    far = tmp_path / "pkg/m3.py"
    os.utime(far, ns=(0, 10**19))
    assert agent(request)["sealed"] is True
    assert sealed(tmp_path) == "S1"
    far.write_text("value = 9999\n")
    os.utime(far, ns=(0, 10**19))
    assert sealed(tmp_path) is None


def _same_size_same_mtime(root: Path) -> None:
    keep_size_and_mtime(root / "pkg/m1.py", "value = 9999\n")


def _renamed(root: Path) -> None:
    """The same bytes and mtime, through a new inode."""
    victim = root / "pkg/m2.py"
    st = victim.stat()
    (root / "pkg/swap").write_bytes(victim.read_bytes())
    os.utime(root / "pkg/swap", ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(root / "pkg/swap", victim)


def _record(root: Path) -> None:
    text = (root / ".patchctl/provenance.json").read_text()
    assert '"abc"' in text
    keep_size_and_mtime(root / ".patchctl/provenance.json", text.replace('"abc"', '"abd"'))


TAMPER: dict[str, Callable[[Path], None]] = {
    "same size and mtime": _same_size_same_mtime,
    "replaced by rename": _renamed,
    "new file": lambda root: (root / "pkg/new.py").write_text(""),
    "new file deep": lambda root: (root / "a/b/c").mkdir(parents=True) or (root / "a/b/c/d.txt").write_text("x"),
    "file removed": lambda root: (root / "pkg/m3.py").unlink(),
    "mode": lambda root: (root / "pkg/m4.py").chmod(0o755),
    "generated file edited": lambda root: keep_size_and_mtime(root / "gen/cfg.py", "x = 2\n"),
    "record edited": _record,
    "skipped folder's manifest file edited": lambda root: keep_size_and_mtime(
        root / "logs/run.txt", "a log the source plac3d\n"
    ),
    "generated file removed": lambda root: (root / "gen/cfg.py").unlink(),
    "folder renamed": lambda root: (root / "pkg").rename(root / "pkh"),  # the files keep their stats
}


@pytest.mark.parametrize("tamper", list(TAMPER))
def test_any_change_to_what_the_verdict_read_unseals(tmp_path: Path, tamper: str) -> None:
    agent(tree(tmp_path))
    assert sealed(tmp_path) == "S1"
    TAMPER[tamper](tmp_path)
    assert sealed(tmp_path) is None


def test_a_finish_that_is_not_verified_removes_the_seal(tmp_path: Path) -> None:
    request = tree(tmp_path)
    agent(request)
    keep_size_and_mtime(tmp_path / "pkg/m0.py", "value = 7777\n")
    reply = agent(request)
    assert (reply["problems"], reply["sealed"]) == ([["pkg/m0.py", "content differs (sha256)"]], False)
    assert not (tmp_path / ".patchctl/seal.json").exists() and sealed(tmp_path) is None


@pytest.mark.parametrize("how", ["no seal_as", "delete refused", "an error"])
def test_any_other_finish_removes_the_seal(tmp_path: Path, how: str) -> None:
    request = tree(tmp_path)
    agent(request)
    assert (tmp_path / ".patchctl/seal.json").exists()
    if how == "no seal_as":
        del request["seal_as"]
    elif how == "delete refused":
        kept = [e for e in request["manifest"] if e[0] != "pkg/m0.py"]  # placed earlier: now to delete
        request = dict(request, delete=True, max_delete=0, manifest=kept)
    else:
        request = dict(request, rendered={"../out.py": "x"})  # a generated file that leads out: refused
    reply = agent(request)
    assert "sealed" not in reply and not (tmp_path / ".patchctl/seal.json").exists()
    assert sealed(tmp_path) is None


def _seal_copy(root: Path) -> bytes:
    return (root / ".patchctl/seal.json").read_bytes()


DAMAGE: dict[str, Callable[[Path, bytes], None]] = {
    "garbage": lambda seal, good: seal.write_bytes(b"\x00{not json"),
    "foreign format": lambda seal, good: seal.write_text(json.dumps(dict(json.loads(good), format=2))),
    "extra leads out": lambda seal, good: seal.write_text(json.dumps(dict(json.loads(good), extra=["../x"]))),
    "extra with a NUL": lambda seal, good: seal.write_text(json.dumps(dict(json.loads(good), extra=["a\0b"]))),
    "FIFO": lambda seal, good: seal.unlink() or os.mkfifo(seal),
    "folder": lambda seal, good: seal.unlink() or seal.mkdir(),
    "huge": lambda seal, good: seal.write_bytes(good + b" " * (16 << 20)),  # valid JSON, past the limit
    "not an object": lambda seal, good: seal.write_text("[1]"),
    "tree not a digest": lambda seal, good: seal.write_text(json.dumps(dict(json.loads(good), tree="ab"))),
    "extra not paths": lambda seal, good: seal.write_text(json.dumps(dict(json.loads(good), extra=[1]))),
    "extra missing here": lambda seal, good: seal.write_text(json.dumps(dict(json.loads(good), extra=["nope"]))),
}


@pytest.mark.parametrize("damage", [*DAMAGE, "symlink"])
def test_a_seal_that_cannot_be_used_reads_as_null(tmp_path: Path, damage: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    agent(tree(root))
    seal = root / ".patchctl/seal.json"
    good = seal.read_bytes()
    if damage == "symlink":  # to a copy of the right seal: still never read through a link
        (tmp_path / "elsewhere.json").write_bytes(good)
        seal.unlink()
        seal.symlink_to(tmp_path / "elsewhere.json")
    else:
        DAMAGE[damage](seal, good)
    assert sealed(root) is None
    # read here, in this process: None, never an exception (the agent turns one into null too)
    doc = agent_seal.read_seal(str(root))
    assert doc is None or agent_seal.extra_state(str(root), doc["extra"]) is None
    if damage in ("huge", "garbage"):  # the control: the undamaged seal is still answered, up to its limit
        seal.write_bytes(good + b" " * ((16 << 20) - len(good)))
        assert sealed(root) == "S1"


def test_checksum_is_never_answered_by_a_seal(tmp_path: Path) -> None:
    agent(tree(tmp_path))
    assert (sealed(tmp_path, rehash=True), sealed(tmp_path)) == (None, "S1")


def test_a_tree_a_transfer_is_writing_into_is_not_answered_sealed(tmp_path: Path) -> None:
    agent(tree(tmp_path))
    fd = os.open(tmp_path / ".patchctl/transfer.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as rsync or a finish holds it (remote/lock_agent.py)
        assert sealed(tmp_path) is None
    finally:
        os.close(fd)
    assert sealed(tmp_path) == "S1"


def test_a_missing_transfer_lock_file_holds_nothing(tmp_path: Path) -> None:
    agent(tree(tmp_path))
    (tmp_path / ".patchctl/transfer.lock").unlink()
    assert sealed(tmp_path) == "S1"


def test_a_request_after_a_sealed_answer_gets_the_full_check(tmp_path: Path) -> None:
    request = tree(tmp_path)
    agent(dict(request, seal_as="S2"))
    expected = agent(dict(request, seal_as="S2"))  # a no-change finish: what a request gets today
    p = start(tmp_path)
    out, err = p.communicate(json.dumps(request).encode(), timeout=30)
    line, _, rest = out.partition(b"\n")
    assert (p.returncode, json.loads(line)) == (0, {"sealed": "S2"}), err
    assert dict(json.loads(rest), render_seconds=0) == dict(expected, render_seconds=0)  # sealed again, as S1
    reply = verify_remote._reply(None, None, 0, out.decode(), "")  # type: ignore[arg-type]
    assert reply.failure is None and reply.data["problems"] == [] and sealed(tmp_path) == "S1"


def test_without_a_seal_request_stdout_is_one_json_document_as_before(tmp_path: Path) -> None:
    request = tree(tmp_path)
    agent(request)  # sealed now: a prescan not asking for it must not say so
    del request["seal_as"]
    p = start(tmp_path, seal=False)
    out, err = p.communicate(json.dumps(request).encode(), 30)
    assert p.returncode == 0, err
    reply = json.loads(out)
    assert out == json.dumps(reply).encode()  # one document, as the agent has always written it
    assert set(reply) == {
        *("python", "root_exists", "deletions", "delete_refused", "problems", "rendered"),
        *("tags_only_here", "tags_missing_here", "read", "read_early", "render_seconds"),
    }
    p = start(tmp_path, seal=False)
    assert p.communicate(b"", 30)[0] == b""  # an agent never asked still writes nothing


def test_nothing_is_written_outside_when_patchctl_leads_out(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    request = tree(root)
    (root / ".patchctl").symlink_to(outside)
    reply = agent(request)
    assert "leads out of the root" in reply["error"]
    assert sealed(root) is None and list(outside.iterdir()) == []
    assert agent_seal.read_seal(str(root)) is None and agent_seal.extra_state(str(root), [".patchctl/x"]) is None
