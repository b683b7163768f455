"""write_all's checks, made before a byte is written, and the path rules every manifest, record
and journal path goes through (#18, req. 7: each line here caught a mutant nothing else did)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from tests.faults.helpers import snapshot

from patchctl import confine, fsutil
from patchctl.errors import OutsideTree, WriteFailed
from patchctl.fsutil import FileChange, write_all


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("a\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o750)
    return root


@pytest.mark.parametrize(
    ("rel", "problem"),
    [
        ("", "is an absolute path"),
        ("/etc/passwd", "is an absolute path"),
        ("\\x", "is an absolute path"),
        ("C:x", "is an absolute path"),
        ("a\\b", "contains a backslash; write it with /"),
        ("a/../../b", "climbs out of the tree with .."),
        ("..", "climbs out of the tree with .."),
        ("a//b", "is not a normalized path (empty or . components)"),
        ("./a", "is not a normalized path (empty or . components)"),
        ("a/", "is not a normalized path (empty or . components)"),
    ],
)
def test_paths_that_do_not_stay_plainly_inside(rel: str, problem: str) -> None:
    assert confine.relative_inside(rel) == problem


@pytest.mark.parametrize("rel", ["a", "a/b.py", "ab:c", ".hidden/f", "a..b"])
def test_plain_relative_paths_are_fine(rel: str) -> None:
    assert confine.relative_inside(rel) is None


def test_a_symlink_out_of_the_tree_is_refused_for_writing_not_for_removing(tree: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("theirs\n")
    os.symlink(tmp_path / "outside.txt", tree / "out.txt")
    with pytest.raises(OutsideTree, match="leads out of the tree through a symlink"):
        confine.resolve_inside(tree, "out.txt")
    assert confine.resolve_inside(tree, "out.txt", follow_last=False) == tree.resolve() / "out.txt"
    with pytest.raises(OutsideTree):
        write_all(tree, [FileChange("out.txt", b"mine\n")])
    write_all(tree, [FileChange("out.txt", None)])
    assert not os.path.lexists(tree / "out.txt") and (tmp_path / "outside.txt").read_text() == "theirs\n"


def test_the_root_itself_resolves_inside(tree: Path) -> None:
    os.symlink(".", tree / "self")
    assert confine.resolve_inside(tree, "self") == tree.resolve()


@pytest.mark.parametrize(
    ("setup", "change", "why"),
    [
        (lambda t: (t / "pkg" / "a.py").chmod(0o444), FileChange("pkg/a.py", b"x\n"), "the file is read-only"),
        (lambda t: (t / "dir").mkdir(), FileChange("dir", b"x\n"), "a directory is in the way"),
        (lambda t: os.symlink("a.py", t / "pkg" / "b.py"), None, "it is the same file as pkg/a.py (a symlink)"),
    ],
)
def test_checks_refuse_before_anything_is_written(tree: Path, setup, change, why: str) -> None:
    setup(tree)
    before = snapshot(tree)
    changes = [change] if change else [FileChange("pkg/a.py", b"1\n"), FileChange("pkg/b.py", b"2\n")]
    with pytest.raises(WriteFailed, match=re.escape(why)):
        write_all(tree, [FileChange("new.txt", b"n\n"), *changes])
    assert snapshot(tree) == before


def test_modes_kept_given_or_defaulted(tree: Path) -> None:
    write_all(
        tree,
        [
            FileChange("run.sh", b"#!/bin/sh\necho\n"),
            FileChange("new.txt", b"n\n"),
            FileChange("tool.sh", b"#!/bin/sh\n", 0o755),
            FileChange("pkg/a.py", b"b\n", 0o600),
        ],
    )
    modes = {p: (tree / p).stat().st_mode & 0o7777 for p in ("run.sh", "new.txt", "tool.sh", "pkg/a.py")}
    assert modes == {"run.sh": 0o750, "new.txt": 0o644, "tool.sh": 0o755, "pkg/a.py": 0o600}


def test_sha256_of_a_file_read_in_chunks_is_that_of_its_bytes(tmp_path: Path) -> None:
    data = os.urandom((1 << 20) * 2 + 123)
    (tmp_path / "big").write_bytes(data)
    assert fsutil.sha256_file(tmp_path / "big") == fsutil.sha256_bytes(data)


def test_an_interrupt_while_a_new_file_is_flushed_is_raised_as_itself(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C lands where a big write blocks, in fsync: the KeyboardInterrupt itself reaches the
    CLI (exit 130, "interrupted"), the tree is as it was and no temp file is left. Only an
    OSError, which names no file, gets the temp file's name for the message."""
    before = snapshot(tree)

    real = os.fsync

    def interrupted(fd: int) -> None:  # the new file's, not the journal's
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(tree / "pkg")):
            raise KeyboardInterrupt
        real(fd)

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_all(tree, [FileChange("pkg/a.py", b"b\n")])
    monkeypatch.undo()
    assert snapshot(tree) == before
