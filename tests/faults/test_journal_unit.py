"""The journal and write_all in-process: what the kill sweep cannot see from outside (#18, req. 7).

A roll-back's count, a journal replaced by rename (never rewritten in place), and deletions that
remove a symlink rather than the file it points to.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

import pytest
from tests.faults.helpers import snapshot

from patchctl import journal, recovery
from patchctl.fsutil import FileChange, write_all


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    for name in ("a.py", "b.py", "c.py"):
        (root / "pkg" / name).write_text(f"{name} old\n")
    return root


class Stop(Exception):
    pass


def _cut_before_commit(tree: Path, changes: list[FileChange], copy: Path) -> None:
    """Run write_all and copy the tree (journal included) at its last moment before the commit
    point: the state a ``kill -9`` there would leave. The original is rolled back in-process."""

    def freeze() -> None:
        shutil.copytree(tree, copy, symlinks=True)
        raise Stop

    with pytest.raises(Stop):
        write_all(tree, changes, command="apply", before_commit=freeze)


CHANGES = [
    FileChange("pkg/a.py", b"new a\n"),
    FileChange("pkg/b.py", None),
    FileChange("pkg/new/d.py", b"d\n"),
    FileChange("e.txt", b"e\n", 0o755),
    FileChange("x/y/w/z.txt", b"z\n"),
]


def _claimed(root: Path) -> int:
    """What a roll-back of the journal on disk must restore: every file whose backup it holds,
    and every file the change created once staging was over."""
    doc = json.loads((root / journal.JOURNAL_DIR / journal.JOURNAL_FILE).read_text())
    held = sum(1 for op in doc["ops"] if op["existed"] and os.path.lexists(root / journal.JOURNAL_DIR / op["backup"]))
    made = sum(1 for op in doc["ops"] if not op["existed"] and os.path.lexists(root / op["path"]))
    return held + (made if doc["state"] != "staging" else 0)


def test_a_cut_at_every_step_recovers_and_counts_what_it_restores(tree: Path, tmp_path: Path, monkeypatch) -> None:
    """The in-process twin of the kill sweep: freeze a copy of the tree before each mutation in
    turn; the process itself must roll back, and so must the next command on the copy."""
    before = snapshot(tree)
    write_all(tree, CHANGES)
    after = snapshot(tree)
    write_all(tree, [FileChange(c.path, before[c.path][0] if c.path in before else None) for c in CHANGES])
    assert snapshot(tree) == before
    sides = []
    for n in range(1, 100):
        copy, count = tmp_path / f"cut{n}", [0]

        def cut(count: list[int] = count, copy: Path = copy, n: int = n) -> None:
            count[0] += 1
            if count[0] == n:
                shutil.copytree(tree, copy, symlinks=True)
                raise Stop

        monkeypatch.setattr(journal, "step", cut)
        with contextlib.suppress(Stop):
            write_all(tree, CHANGES, command="apply")
        monkeypatch.undo()
        if not copy.exists():
            break  # fewer steps than n: every one was cut
        sides.append(_recovered_side(copy, before, after))
        # the process itself rolled back before the commit point; past it, the next command finishes
        recovery.recover(tree)
        assert snapshot(tree) == (before if sides[-1] == "before" else after), n
        if sides[-1] == "after":
            write_all(tree, [FileChange(c.path, before[c.path][0] if c.path in before else None) for c in CHANGES])
    flips = sides.index("after")
    assert sides == ["before"] * flips + ["after"] * (len(sides) - flips) and flips >= 8, sides


def _recovered_side(copy: Path, before: dict, after: dict) -> str:
    """Recover ``copy`` as the next command would; check what it says against what it did."""
    path = copy / journal.JOURNAL_DIR / journal.JOURNAL_FILE
    if not path.exists():
        assert recovery.recover(copy) in (None, recovery.Recovery("patchctl", "cleaned up", 0))
        assert snapshot(copy) in (before, after)
        return "before" if snapshot(copy) == before else "after"
    state, claimed = json.loads(path.read_text())["state"], _claimed(copy)
    done = recovery.recover(copy)
    if state == "done":
        assert done == recovery.Recovery("apply", "finished", len(CHANGES)) and snapshot(copy) == after
        return "after"
    assert done == recovery.Recovery("apply", "rolled back", claimed) and snapshot(copy) == before
    return "before"


def test_the_journal_is_replaced_by_rename_never_rewritten_in_place(tree: Path, monkeypatch) -> None:
    """A crash while the journal is being written must leave the previous journal whole."""
    jr = journal.begin(tree, "apply")
    jr.ops.append(journal.Op("pkg/a.py", journal.temp_name(jr, "pkg/a.py"), "backup/0", True))
    jr.save()
    saved = (jr.folder / journal.JOURNAL_FILE).read_bytes()
    assert json.loads(saved)["state"] == "staging"
    assert sorted(os.listdir(jr.folder)) == [journal.JOURNAL_FILE]  # no temp file left behind

    def torn(doc: object, f, **kw: object) -> None:
        f.write('{"format": 1, "id": ')  # the disk filled up, or the process died, mid-write
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(journal.json, "dump", torn)
    jr.state = "swapping"
    with pytest.raises(OSError):
        jr.save()
    assert (jr.folder / journal.JOURNAL_FILE).read_bytes() == saved
    loaded = recovery.load(tree)
    assert loaded is not None and loaded.state == "staging" and loaded.ops == jr.ops


def test_a_deleted_symlink_is_the_link_not_its_target(tree: Path) -> None:
    os.symlink("a.py", tree / "pkg" / "link.py")
    write_all(tree, [FileChange("pkg/link.py", None)])
    assert not os.path.lexists(tree / "pkg" / "link.py")
    assert (tree / "pkg" / "a.py").read_text() == "a.py old\n"


def test_a_rolled_back_deletion_of_a_symlink_puts_the_link_back(tree: Path, tmp_path: Path) -> None:
    os.symlink("a.py", tree / "pkg" / "link.py")
    before = snapshot(tree)
    copy = tmp_path / "killed"
    _cut_before_commit(tree, [FileChange("pkg/link.py", None), FileChange("pkg/c.py", b"c\n")], copy)
    assert snapshot(tree) == before
    assert (copy / "pkg" / "a.py").read_text() == "a.py old\n" and not os.path.lexists(copy / "pkg" / "link.py")
    assert recovery.recover(copy) == recovery.Recovery("apply", "rolled back", 2)
    assert snapshot(copy) == before and os.readlink(copy / "pkg" / "link.py") == "a.py"


def test_a_folder_emptied_by_deletions_goes_and_its_non_empty_parent_stays(tree: Path) -> None:
    (tree / "pkg" / "sub" / "deep").mkdir(parents=True)
    (tree / "pkg" / "sub" / "deep" / "only.py").write_text("x\n")
    write_all(tree, [FileChange("pkg/sub/deep/only.py", None)])
    assert not (tree / "pkg" / "sub").exists() and (tree / "pkg" / "a.py").exists()
    assert sorted(p.name for p in tree.iterdir()) == ["pkg"]  # no journal left behind


def test_a_second_change_is_refused_while_a_journal_waits(tree: Path) -> None:
    from patchctl.errors import ChangePending

    jr = journal.begin(tree, "apply")
    jr.save()
    with pytest.raises(ChangePending):
        journal.begin(tree, "revert")
    with pytest.raises(ChangePending):
        write_all(tree, [FileChange("pkg/a.py", b"x\n")])
    assert (tree / "pkg" / "a.py").read_text() == "a.py old\n"
    assert recovery.recover(tree) == recovery.Recovery("apply", "rolled back", 0)
    assert recovery.recover(tree) is None


def test_the_journal_file_says_its_format(tree: Path) -> None:
    jr = journal.begin(tree, "apply")
    jr.save()
    doc = json.loads((jr.folder / journal.JOURNAL_FILE).read_text())
    assert (doc["format"], doc["command"], doc["state"], doc["pid"]) == (1, "apply", "staging", os.getpid())
    recovery.recover(tree)


def test_saving_the_journal_keeps_no_file_open(tree: Path) -> None:
    """Each save fsyncs the journal's folder through a descriptor of its own; one left open per
    save runs a long write (one save per file) out of descriptors."""
    j = journal.begin(tree, "apply")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        j.save()
    assert len(os.listdir("/proc/self/fd")) == before
    journal.finish(j)


def test_begin_refuses_a_journal_folder_that_leads_elsewhere(tree: Path, tmp_path: Path) -> None:
    """A `.patchctl-journal` symlinked out of the tree: begin refuses before writing anything there."""
    from patchctl.errors import JournalUnsafe

    victim = tmp_path / "victim"
    victim.mkdir()
    os.symlink(victim, tree / journal.JOURNAL_DIR)
    with pytest.raises(JournalUnsafe):
        journal.begin(tree, "apply").save()
    assert list(victim.iterdir()) == []


def test_begin_reuses_an_empty_journal_folder(tree: Path) -> None:
    """A kill right after begin's mkdir leaves an empty journal folder: the next change reuses it."""
    (tree / journal.JOURNAL_DIR).mkdir()
    j = journal.begin(tree, "apply")
    j.save()
    assert (tree / journal.JOURNAL_DIR / journal.JOURNAL_FILE).is_file()
    journal.finish(j)


def test_emptied_folders_are_pruned_in_a_tree_reached_through_a_symlink(tree: Path, tmp_path: Path) -> None:
    """The tree given as a symlink (a cluster's /data/verl -> /mnt/...): folders a deletion emptied
    still go, up to the root and not past it."""
    (tree / "a" / "b").mkdir(parents=True)
    link = tmp_path / "link"
    os.symlink(tree, link)
    journal.prune_empty_parents(link, [link / "a" / "b" / "gone.py"])
    assert not (tree / "a").exists() and tree.is_dir() and (tree / "pkg").is_dir()


def test_pruning_never_removes_a_folder_outside_the_tree(tree: Path, tmp_path: Path) -> None:
    """A path outside the root (a journal confinement would refuse, were it missed) prunes nothing."""
    (tmp_path / "outside" / "empty").mkdir(parents=True)
    journal.prune_empty_parents(tree, [tmp_path / "outside" / "empty" / "gone.py"])
    assert (tmp_path / "outside" / "empty").is_dir()


@pytest.mark.parametrize("doc", [{"format": 1}, {"id": 5, "command": "apply", "ops": [], "dirs": [], "state": "done"}])
def test_a_damaged_journal_is_refused_by_name(tree: Path, doc: dict[str, object]) -> None:
    """A journal missing a field, or with one of the wrong type, is damaged: never acted on."""
    from patchctl.errors import JournalDamaged

    (tree / journal.JOURNAL_DIR).mkdir()
    (tree / journal.JOURNAL_DIR / journal.JOURNAL_FILE).write_text(json.dumps(doc))
    with pytest.raises(JournalDamaged):
        recovery.load(tree)


def test_a_journal_file_that_is_a_symlink_is_refused(tree: Path, tmp_path: Path) -> None:
    from patchctl.errors import JournalUnsafe

    (tree / journal.JOURNAL_DIR).mkdir()
    (tmp_path / "j.json").write_text("{}")
    os.symlink(tmp_path / "j.json", tree / journal.JOURNAL_DIR / journal.JOURNAL_FILE)
    with pytest.raises(JournalUnsafe, match="is a symbolic link"):
        recovery.load(tree)


def test_a_journal_naming_a_path_outside_the_tree_is_refused(tree: Path) -> None:
    """A crafted journal whose op leaves the tree: load refuses it, so a plain verify moves nothing there."""
    from patchctl.errors import JournalUnsafe

    doc = {
        "format": 1,
        "id": "abcdef12",
        "command": "apply",
        "dirs": [],
        "state": "done",
        "ops": [{"path": "../victim.py", "tmp": None, "backup": "backup/0", "existed": True}],
    }
    (tree / journal.JOURNAL_DIR).mkdir()
    (tree / journal.JOURNAL_DIR / journal.JOURNAL_FILE).write_text(json.dumps(doc))
    with pytest.raises(JournalUnsafe, match=r"victim.py"):
        recovery.load(tree)
