"""State read back from disk is confined like manifests are (issue 18, requirement 1).

A crafted recovery journal, apply record or upstream rule must not make patchctl touch, move in
or read anything outside the tree, nor act through a symlink. Each case is refused in one line
naming the file at fault, with every byte inside and outside the tree as it was.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.faults.helpers import make_tree, one_error, run, snapshot

JOURNAL = ".patchctl-journal"


@pytest.fixture()
def world(tmp_path: Path) -> tuple[Path, Path]:
    """A tree, and beside it a victim folder with files a crafted journal aims at."""
    tree = make_tree(tmp_path / "tree", git=False)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("not patchctl's\n")
    (victim / "0").write_text("not a backup\n")
    return tree, victim


def write_journal(
    tree: Path, ops: list[dict[str, object]], state: str = "swapping", dirs: tuple[str, ...] = ()
) -> Path:
    folder = tree / JOURNAL
    folder.mkdir(exist_ok=True)
    doc = {"format": 1, "id": "abcd1234", "command": "apply", "state": state, "pid": 1, "ops": ops, "dirs": list(dirs)}
    (folder / "journal.json").write_text(json.dumps(doc))
    return folder


def refused(tree: Path, everything: Path, problem: str) -> None:
    """``verify`` refuses in one line naming the journal, and touches nothing anywhere."""
    before = snapshot(everything)
    code, out = run("verify", "-t", str(tree))
    assert code == 2, out
    line = one_error(out)
    assert line.startswith(f"error: {tree / JOURNAL}: refusing the journal of an interrupted patchctl change: "), line
    assert problem in line
    assert "nothing was touched" in line
    assert snapshot(everything) == before


def test_a_backup_name_climbing_out_cannot_delete_an_outside_file(world: tuple[Path, Path], tmp_path: Path) -> None:
    tree, victim = world
    write_journal(
        tree, [{"path": "README.md", "tmp": None, "backup": "../../victim/keep.txt", "existed": True}], state="done"
    )
    refused(tree, tmp_path, "'../../victim/keep.txt'")
    assert (victim / "keep.txt").exists()


def test_a_backup_name_climbing_out_cannot_move_an_outside_file_in(world: tuple[Path, Path], tmp_path: Path) -> None:
    tree, victim = world
    write_journal(tree, [{"path": "stolen.txt", "tmp": None, "backup": "../../victim/keep.txt", "existed": True}])
    refused(tree, tmp_path, "'../../victim/keep.txt'")
    assert not (tree / "stolen.txt").exists() and (victim / "keep.txt").exists()


def test_a_backup_folder_that_is_a_symlink_is_refused(world: tuple[Path, Path], tmp_path: Path) -> None:
    """The names are the ones patchctl writes; the folder they live in leads out."""
    tree, victim = world
    folder = write_journal(
        tree, [{"path": "README.md", "tmp": None, "backup": "backup/0", "existed": True}], state="done"
    )
    os.symlink(victim, folder / "backup")
    refused(tree, tmp_path, "backup is a symbolic link")
    assert (victim / "0").exists()


@pytest.mark.parametrize("field", ["path", "tmp"])
def test_no_unlink_through_an_in_tree_symlink(world: tuple[Path, Path], tmp_path: Path, field: str) -> None:
    tree, victim = world
    os.symlink(victim, tree / "link")
    op = {"path": "link/keep.txt", "tmp": None, "backup": "backup/0", "existed": False}
    if field == "tmp":
        op = {"path": "link/x", "tmp": "link/keep.txt", "backup": "backup/0", "existed": False}
    write_journal(tree, [op])
    refused(tree, tmp_path, "leads out of the tree through a symlink")
    assert (victim / "keep.txt").exists()


def test_a_temp_name_patchctl_never_writes_is_refused(world: tuple[Path, Path], tmp_path: Path) -> None:
    """Inside the tree, but not a temp file: rolling back would delete the user's own file."""
    tree, _ = world
    write_journal(tree, [{"path": "new.txt", "tmp": "verl/__init__.py", "backup": "backup/0", "existed": False}])
    refused(tree, tmp_path, "'verl/__init__.py'")
    assert (tree / "verl" / "__init__.py").exists()


def test_a_created_folder_outside_is_not_removed(world: tuple[Path, Path], tmp_path: Path) -> None:
    tree, victim = world
    (victim / "empty").mkdir()
    os.symlink(victim, tree / "link")
    write_journal(tree, [], dirs=("link/empty",))
    refused(tree, tmp_path, "leads out of the tree through a symlink")
    assert (victim / "empty").is_dir()


def test_a_journal_folder_that_is_a_symlink_is_refused(world: tuple[Path, Path], tmp_path: Path) -> None:
    tree, victim = world
    os.symlink(victim, tree / JOURNAL)
    refused(tree, tmp_path, "is a symbolic link")
    (victim / "journal.json").write_text(
        json.dumps(
            {"format": 1, "id": "abcd1234", "command": "apply", "state": "done", "pid": 1, "ops": [], "dirs": []}
        )
    )
    refused(tree, tmp_path, "is a symbolic link")
    assert (victim / "journal.json").exists()


def test_a_journal_folder_that_is_a_file_is_refused(world: tuple[Path, Path], tmp_path: Path) -> None:
    tree, _ = world
    (tree / JOURNAL).write_text("x\n")
    refused(tree, tmp_path, "is not a folder")
    code, out = run("apply", "-t", str(tree))
    assert code == 2 and "is not a folder" in one_error(out)


def test_a_journal_file_that_is_a_symlink_is_refused(world: tuple[Path, Path], tmp_path: Path) -> None:
    tree, victim = world
    (victim / "j.json").write_text(
        json.dumps(
            {"format": 1, "id": "abcd1234", "command": "apply", "state": "swapping", "pid": 1, "ops": [], "dirs": []}
        )
    )
    (tree / JOURNAL).mkdir()
    os.symlink(victim / "j.json", tree / JOURNAL / "journal.json")
    refused(tree, tmp_path, "journal.json is a symbolic link")


def test_a_genuine_journal_still_rolls_back(world: tuple[Path, Path]) -> None:
    """The checks refuse what patchctl never writes, not what it does."""
    tree, _ = world
    (tree / ".new.txt.abcd1234.patchctl-tmp").write_text("staged\n")
    (tree / "new.txt").write_text("half\n")
    write_journal(
        tree, [{"path": "new.txt", "tmp": ".new.txt.abcd1234.patchctl-tmp", "backup": "backup/0", "existed": False}]
    )
    _, out = run("verify", "-t", str(tree))
    assert "error:" not in out  # verify's own verdict (the uky patches are absent) is beside the point
    assert "an interrupted `apply` was rolled back; 1 file(s) restored" in out
    assert not (tree / "new.txt").exists() and not (tree / JOURNAL).exists()


# -- the apply record ---------------------------------------------------------------------------


def applied_tree(tmp_path: Path) -> tuple[Path, Path]:
    tree = make_tree(tmp_path / "tree")
    assert run("apply", "-t", str(tree), "--only", "quick-fix")[0] == 0
    return tree, tree / ".patchctl" / "applied.json"


def test_a_record_entry_through_a_symlink_is_never_used(tmp_path: Path) -> None:
    """The record names a file inside the tree by name, but a symlink there leads out."""
    tree, record = applied_tree(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "QUICK_FIX.md").write_bytes((tree / "QUICK_FIX.md").read_bytes())
    os.symlink(victim, tree / "out")
    doc = json.loads(record.read_text())
    doc["patches"][0]["path"] = "out/QUICK_FIX.md"
    record.write_text(json.dumps(doc))
    before = snapshot(tmp_path)
    for cmd in ("revert", "verify"):
        code, out = run(cmd, "-t", str(tree))
        assert code == 2, out
        line = one_error(out)
        assert line.startswith(
            f"error: {record}: the apply record is damaged (patch 'quick-fix' names "
            "'out/QUICK_FIX.md', which leads out of the tree through a symlink"
        ), line
        assert snapshot(tmp_path) == before


def test_a_record_folder_that_is_a_symlink_is_never_read(tmp_path: Path) -> None:
    tree, record = applied_tree(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    (tree / ".patchctl").rename(elsewhere)
    os.symlink(elsewhere, tree / ".patchctl")
    before = snapshot(tmp_path)
    code, out = run("revert", "-t", str(tree))
    assert code == 2, out
    assert one_error(out).startswith(f"error: {record}: the apply record is damaged (.patchctl is a symbolic link")
    assert snapshot(tmp_path) == before


def test_a_record_file_that_is_a_symlink_is_never_read(tmp_path: Path) -> None:
    tree, record = applied_tree(tmp_path)
    elsewhere = tmp_path / "applied.json"
    record.rename(elsewhere)
    os.symlink(elsewhere, record)
    before = snapshot(tmp_path)
    code, out = run("revert", "-t", str(tree))
    assert code == 2, out
    assert one_error(out).startswith(f"error: {record}: the apply record is damaged (applied.json is a symbolic link")
    assert snapshot(tmp_path) == before


# -- upstream.files -----------------------------------------------------------------------------

UPSTREAM_PS = """[patchset]
name = "peek"
tag = "T"
[[patch]]
id = "peek"
title = "t"
why = "w"
kind = "prelude"
target = ["verl/__init__.py"]
[patch.params]
block = "import os"
[patch.upstream]
kind = "regex"
pattern = "SECRET"
files = ["{file}"]
"""


def test_an_upstream_file_behind_a_symlink_is_not_read(tmp_path: Path) -> None:
    """Reading it would tell the user (and a --json consumer) what an outside file holds."""
    tree = make_tree(tmp_path / "tree", git=False)
    (tmp_path / "secret.py").write_text("SECRET = 'hunter2'\n")
    os.symlink(tmp_path, tree / "up")
    ps = tmp_path / "ps"
    ps.mkdir()
    (ps / "patchset.toml").write_text(UPSTREAM_PS.format(file="up/secret.py"))
    code, out = run("verify", "-t", str(tree), "-p", str(ps))
    assert code == 2, out
    assert one_error(out).startswith(
        f"error: {tree}: patch 'peek': refusing to touch 'up/secret.py': it leads out of the tree through a symlink"
    )
    assert "hunter2" not in out


# -- the remote agent's "inside the root" -------------------------------------------------------


def test_the_remote_agent_never_deletes_in_a_sibling_of_the_root(tmp_path: Path) -> None:
    """``/x/root-evil`` starts with ``/x/root`` but is not inside it; a host manifest naming a
    file there through a symlink must not get it deleted."""
    from patchctl.migrate import remote_agent

    root, sibling = tmp_path / "root", tmp_path / "root-evil"
    (root / ".patchctl").mkdir(parents=True)
    sibling.mkdir()
    (sibling / "keep.txt").write_text("the sibling's\n")
    os.symlink("../root-evil", root / "ln")
    os.symlink(sibling, root / "abs")
    (root / ".patchctl" / "manifest.json").write_text(json.dumps({"files": ["ln/keep.txt", "abs/keep.txt"]}))
    assert remote_agent.inside(str(root), "ln/keep.txt") is None
    assert remote_agent.inside(str(root), "abs/keep.txt") is None
    request = {
        "root": str(root),
        "action": "finish",
        "manifest": [],
        "rendered": {},
        "delete": True,
        "max_delete": 100,
        "tags": {"pattern": r"#\s*(T)\b", "needles": ["T"], "expected": []},
        "provenance": {},
    }
    reply = remote_agent.main(request)
    assert reply["deletions"] == []
    assert (sibling / "keep.txt").read_text() == "the sibling's\n"


def test_the_remote_agent_never_writes_its_records_through_a_symlinked_patchctl(tmp_path: Path) -> None:
    from patchctl.migrate import remote_agent

    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    os.symlink(elsewhere, root / ".patchctl")
    request = {
        "root": str(root),
        "action": "finish",
        "manifest": [],
        "rendered": {},
        "delete": False,
        "max_delete": 100,
        "tags": {"pattern": r"#\s*(T)\b", "needles": ["T"], "expected": []},
        "provenance": {},
    }
    with pytest.raises(ValueError, match=r"/.patchctl leads out of the root"):
        remote_agent.main(request)
    assert list(elsewhere.iterdir()) == []
