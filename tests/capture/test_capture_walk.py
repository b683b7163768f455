"""The capture walk's verdict on each kind of name a tree can hold (real files, links, FIFOs, a
socket, a device), and the walk of a tree git does not know."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchctl.capture.walk import Walk, judge, judged, walk


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    """A tree with one of everything, and a file outside it."""
    top = tmp_path / "tree"
    (top / "pkg" / "deep").mkdir(parents=True)
    (top / ".git").mkdir()
    (top / ".git" / "config").write_text("[core]\n")
    (top / "__pycache__").mkdir()
    (top / "__pycache__" / "m.pyc").write_bytes(b"\0")
    (top / "top.py").write_text("a = 1\n")
    (top / "pkg" / "deep" / "m.py").write_text("b = 2\n")
    (tmp_path / "secret.py").write_text("s = 3\n")
    os.symlink("deep/m.py", top / "pkg" / "same.py")
    os.symlink(tmp_path / "secret.py", top / "out.py")
    os.symlink(".git/config", top / "git.cfg")
    os.symlink("missing.py", top / "dangling.py")
    os.symlink("loop2", top / "loop1")
    os.symlink("loop1", top / "loop2")
    os.symlink("pkg", top / "pkglink")
    os.symlink(tmp_path, top / "up")
    os.mkfifo(top / "pkg" / "pipe")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(top / "s.sock"))
    try:
        yield top
    finally:
        server.close()


def test_each_kind_of_name_gets_its_verdict(root: Path) -> None:
    out = root.parent
    assert judge(root, "top.py") is None
    assert judge(root, "pkg/same.py") is None  # a link that stays inside is read through
    assert judge(root, "out.py") == f"leads out of the tree through a symlink (to {out / 'secret.py'})"
    assert judge(root, "up") == f"leads out of the tree through a symlink (to {out})"
    assert judge(root, "git.cfg") == f"leads into .git through a symlink (to {root / '.git' / 'config'})"
    assert judge(root, "pkg/pipe") == "is a FIFO, not a regular file"
    assert judge(root, "s.sock") == "is a socket, not a regular file"
    assert judge(Path("/dev"), "null") == "is a device, not a regular file"
    for quiet in ("dangling.py", "loop1", "pkglink", "pkg", "gone.py"):
        assert judge(root, quiet) == "", quiet


def test_judged_keeps_the_files_and_names_the_skipped_in_order(root: Path) -> None:
    got = judged(root, ["s.sock", "top.py", "pkglink", "pkg/pipe", "out.py", "pkg/same.py"])
    assert got == Walk(
        frozenset({"top.py", "pkg/same.py"}),
        (
            ("out.py", f"leads out of the tree through a symlink (to {root.parent / 'secret.py'})"),
            ("pkg/pipe", "is a FIFO, not a regular file"),
            ("s.sock", "is a socket, not a regular file"),
        ),
    )


def test_the_walk_lists_every_name_but_tool_folders_and_enters_no_link(root: Path) -> None:
    got = walk(root)
    assert got.files == frozenset({"top.py", "pkg/deep/m.py", "pkg/same.py"})
    assert [rel for rel, _ in got.skipped] == ["git.cfg", "out.py", "pkg/pipe", "s.sock", "up"]
