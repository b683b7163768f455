"""The host-side agent's edges: the delete guard's boundary, what the tag scan leaves out, what
the placed-files manifest keeps, and what each kind of difference is called (#18, req. 7)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from agent_helpers import agent, entry, placed, req

TAGS = {"pattern": r"#\s*(Uky)\b", "needles": ["Uky"], "expected": []}


def test_the_delete_guard_allows_exactly_its_maximum(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    names = [f"f{i}.py" for i in range(3)]
    for n in names:
        (root / n).write_text(n)
    placed(root, names)
    reply = agent(req(root, "finish", [entry(root, "f0.py")], delete=True, max_delete=2))
    assert reply["delete_refused"] is False and reply["deletions"] == ["f1.py", "f2.py"]
    assert [p.name for p in root.iterdir() if p.suffix == ".py"] == ["f0.py"]


def test_deleting_prunes_emptied_folders_up_to_the_root_and_no_further(tmp_path: Path) -> None:
    root = tmp_path / "r"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "keep.txt").write_text("k")
    (root / "a" / "b" / "gone.py").write_text("g")
    (root / "c" / "d").mkdir(parents=True)
    (root / "c" / "d" / "gone.py").write_text("g")
    placed(root, ["a/b/gone.py", "c/d/gone.py"])
    reply = agent(req(root, "finish", [], delete=True))
    assert reply["deletions"] == ["a/b/gone.py", "c/d/gone.py"]
    assert (root / "a" / "keep.txt").exists() and not (root / "a" / "b").exists() and not (root / "c").exists()
    assert root.is_dir()


def test_what_the_tag_scan_leaves_out(tmp_path: Path) -> None:
    root = tmp_path / "r"
    for rel, data in {
        "logs.py": b"x = 1  # Uky\n",
        "sub/__pycache__/m.py": b"x = 1  # Uky\n",
        "bin.dat": b"\0# Uky\n",
        "late_nul.py": b"# Uky\n" + b"x" * (1024 - 6) + b"\0",
        "big.py": b"# Uky\n" + b"#" * (4 << 20),
        "no_needle.py": b"# uky is lower case\n",
        "git_ignore.py": b"X = 1  # Uky\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    os.symlink("logs.py", root / "link.py")
    reply = agent(req(root, "finish", [], rendered={"git_ignore.py": "X = 1  # Uky\n"}, tags=TAGS))
    assert reply["tags_only_here"] == [["late_nul.py", 1, "# Uky"], ["logs.py", 1, "x = 1  # Uky"]]


def test_tags_are_numbered_from_one_and_compared_exactly(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    (root / "a.py").write_text("import os\nx = 1  # Uky\n")
    reply = agent(req(root, "finish", [entry(root, "a.py")], tags={**TAGS, "expected": [["a.py", 2, "x = 1  # Uky"]]}))
    assert reply["tags_only_here"] == [] and reply["tags_missing_here"] == []


def test_without_delete_the_manifest_keeps_earlier_files_still_there(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    for n in ("new.py", "old.py"):
        (root / n).write_text(n)
    placed(root, ["old.py", "gone.py", "../outside.py"])
    agent(req(root, "finish", [entry(root, "new.py")]))
    assert json.loads((root / ".patchctl" / "manifest.json").read_text()) == {
        "format": 1,
        "files": ["new.py", "old.py"],
    }
    agent(req(root, "finish", [entry(root, "new.py")], delete=True, max_delete=5))
    assert json.loads((root / ".patchctl" / "manifest.json").read_text())["files"] == ["new.py"]
    assert not (root / "old.py").exists()


def test_a_damaged_manifest_of_placed_files_is_an_empty_one(tmp_path: Path) -> None:
    root = tmp_path / "r"
    (root / ".patchctl").mkdir(parents=True)
    (root / ".patchctl" / "manifest.json").write_text("{half")
    (root / "a.py").write_text("a")
    reply = agent(req(root, "finish", [entry(root, "a.py")], delete=True))
    assert "error" not in reply and reply["deletions"] == [] and reply["problems"] == []


def test_plan_writes_nothing_and_lists_what_finish_would_do(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    (root / "a.py").write_text("a")
    (root / "same.txt").write_text("S\n")
    before = sorted(p.name for p in root.rglob("*"))
    reply = agent(
        req(
            root,
            "plan",
            [entry(root, "a.py"), ["b.py", "f", "0" * 64, False]],
            rendered={"same.txt": "S\n", "new.txt": "N\n"},
            tags=TAGS,
        )
    )
    assert reply["problems"] == [["b.py", "missing"]] and reply["rendered"] == ["new.txt"]
    assert reply["root_exists"] is True and reply["tags_only_here"] == []
    assert sorted(p.name for p in root.rglob("*")) == before


@pytest.mark.parametrize(
    ("make", "kind", "says"),
    [
        (lambda p: p.write_text("x"), "l", "not a symbolic link"),
        (lambda p: p.mkdir(), "f", "not a regular file"),
        (lambda p: os.symlink("elsewhere", p), "f", "not a regular file"),
        (lambda p: None, "l", "missing"),
    ],
)
def test_each_kind_of_difference_is_named(tmp_path: Path, make, kind: str, says: str) -> None:
    root = tmp_path / "r"
    root.mkdir()
    make(root / "x")
    reply = agent(req(root, "finish", [["x", kind, "target" if kind == "l" else "0" * 64, False]]))
    assert reply["problems"] == [["x", says]]


def test_a_matching_entry_of_each_kind_is_no_problem(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    os.symlink("run.sh", root / "link")
    reply = agent(req(root, "finish", [[*entry(root, "run.sh")[:3], True], ["link", "l", "run.sh", False]]))
    assert reply["problems"] == []
    assert json.loads((root / ".patchctl" / "provenance.json").read_text())["verified"] is True


def test_an_unsafe_manifest_path_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    reply = agent(req(root, "finish", [["../x", "f", "0" * 64, False], ["/etc/passwd", "f", "0" * 64, False]]))
    assert reply["problems"] == [["../x", "unsafe path"], ["/etc/passwd", "unsafe path"]]


def test_only_the_owners_execute_bit_counts(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    (root / "data.txt").write_text("d")
    (root / "data.txt").chmod(0o645)  # others may execute: still not an executable file of the tree
    assert agent(req(root, "finish", [entry(root, "data.txt")]))["problems"] == []


@pytest.mark.parametrize(
    ("rel", "skip"),
    [("checkpoints/x.py", True), ("a/logs/b.py", True), ("logs.py", False), ("a/b.py", False), ("a/.git/c.py", True)],
)
def test_skipped_folders_are_folders_not_file_names(rel: str, skip: bool) -> None:
    """What the host's tag scan leaves out and the local expected inventory leaves out alike."""
    from patchctl.migrate import remote_agent

    assert remote_agent.skipped(rel) is skip


def test_a_file_of_exactly_the_scan_limit_is_scanned(tmp_path: Path) -> None:
    from patchctl.migrate import remote_agent

    root = tmp_path / "r"
    root.mkdir()
    head = b"# Uky\n"
    (root / "edge.py").write_bytes(head + b"#" * (remote_agent.MAX_SCAN - len(head)))
    reply = agent(req(root, "finish", [], tags=TAGS))
    assert reply["tags_only_here"] == [["edge.py", 1, "# Uky"]]


def test_a_root_written_with_a_trailing_slash_names_files_the_same(tmp_path: Path) -> None:
    """`host:/path/` and `host:/path` are one tree: the tag scan names `sub/a.py`, not `ub/a.py`."""
    root = tmp_path / "r"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.py").write_text("x = 1  # Uky\n")
    reply = agent({**req(root, "finish", [], tags=TAGS), "root": str(root) + os.sep})
    assert reply["tags_only_here"] == [["sub/a.py", 1, "x = 1  # Uky"]]


def test_a_generated_file_lands_in_a_new_folder_readable_by_all(tmp_path: Path) -> None:
    """finish writes a rendered file whose folder does not exist yet, with the mode of any other file
    (0644: the training job of another user reads it), not mkstemp's private 0600."""
    root = tmp_path / "r"
    root.mkdir()
    reply = agent(req(root, "finish", [], rendered={"gen/deep/run.yaml": "a: 1\n"}))
    assert reply["problems"] == [] and reply["rendered"] == ["gen/deep/run.yaml"]
    written = root / "gen" / "deep" / "run.yaml"
    assert written.read_text() == "a: 1\n" and written.stat().st_mode & 0o777 == 0o644


def test_a_failed_write_leaves_no_temp_file_and_names_the_error(tmp_path: Path) -> None:
    """A rendered file whose place is a folder: the rename fails, the host answers an error, and the
    temp file written beside it is gone (a half-written `.patchctl-*` would sit in the tree)."""
    root = tmp_path / "r"
    (root / "run.yaml" / "inside").mkdir(parents=True)
    reply = agent(req(root, "finish", [], rendered={"run.yaml": "a: 1\n"}))
    assert "error" in reply and "run.yaml" in reply["error"]
    assert [p.name for p in root.rglob(".patchctl-*")] == []


def test_finish_waits_for_a_transfer_still_holding_the_lock(tmp_path: Path) -> None:
    """A finish of a killed migrate still holds the root's lock: the next one waits for it to end,
    then writes, rather than failing at once or writing beside it."""
    import fcntl
    import threading

    root = tmp_path / "r"
    (root / ".patchctl").mkdir(parents=True)
    fd = os.open(root / ".patchctl" / "transfer.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    replies: list[dict[str, object]] = []
    finish = threading.Thread(
        target=lambda: replies.append(agent(req(root, "finish", [], rendered={"run.yaml": "a: 1\n"})))
    )
    finish.start()
    finish.join(3.0)
    assert finish.is_alive() and not (root / "run.yaml").exists(), "finish wrote while another transfer held the lock"
    os.close(fd)
    finish.join()
    assert "error" not in replies[0] and (root / "run.yaml").read_text() == "a: 1\n"


def test_a_patchctl_folder_leading_out_of_the_root_is_refused(tmp_path: Path) -> None:
    root, victim = tmp_path / "r", tmp_path / "victim"
    root.mkdir()
    victim.mkdir()
    os.symlink(victim, root / ".patchctl")
    reply = agent(req(root, "finish", [], rendered={"run.yaml": "a: 1\n"}))
    assert reply["error"] == f"ValueError: {root}/.patchctl leads out of the root; make it a folder there"
    assert list(victim.iterdir()) == [] and not (root / "run.yaml").exists()


def test_the_reply_names_the_hosts_python_and_no_refusal_without_delete(tmp_path: Path) -> None:
    """migrate shows the host's Python version; a finish without --delete refuses nothing."""
    import re

    (tmp_path / "r").mkdir()
    reply = agent(req(tmp_path / "r", "finish", []))
    assert re.fullmatch(r"3\.\d+\.\d+\S*", reply["python"]) and reply["delete_refused"] is False
