"""The host agent's walk by folder descriptors (``agent_files.survey``): each folder opened relative
to its parent's descriptor, never through a link, and listed through it. It must list exactly
what a path-based ``os.walk`` lists, never reach out of the root (not even through a folder
swapped for a link mid-walk), and leave no descriptor open."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import struct
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from patchctl.migrate import agent_files, agent_seal
from patchctl.migrate.agent_files import SKIP_DIRS, survey


def reference(root: Path) -> dict[str, os.stat_result]:
    """What the walk must list: os.walk's non-folder entries (links to folders included, not
    entered), SKIP_DIRS left out, each with its lstat."""
    out = {}
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        prefix = "" if rel == "." else rel + "/"
        for name in [d for d in dirs if os.path.islink(os.path.join(folder, d))] + files:
            out[prefix + name] = os.lstat(os.path.join(folder, name))
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not os.path.islink(os.path.join(folder, d))]
    return out


def rich_tree(root: Path, outside: Path) -> None:
    """Nested folders, links of each kind, a FIFO, skipped folders and names that are hard to spell."""
    (outside / "secret.py").parent.mkdir(parents=True, exist_ok=True)
    (outside / "secret.py").write_text("s = 1\n")
    for rel in [
        "a.py",
        "a-b.py",
        "a/x.py",
        "a/b/c/d/e/deep.py",
        "sp ace/ü.py",
        "-/dash.py",
        "x/.hidden",
        "logs/out.py",
    ]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (root / "new\nline.py").write_text("n")
    os.mkdir(root / os.fsdecode(b"bad\xffbyte"))
    (root / os.fsdecode(b"bad\xffbyte") / "f.py").write_text("f")
    (root / "a/b/.git").mkdir()
    (root / "a/b/.git/HEAD").write_text("ref")
    (root / "empty").mkdir()
    os.symlink("a/b", root / "inside_link")  # a link to a folder inside: listed, not entered
    os.symlink(outside, root / "out_link")  # a link to a folder outside: listed, not entered
    os.symlink("missing", root / "a/dangling")
    os.symlink("../a.py", root / "a/file_link")
    os.mkfifo(root / "a/fifo")


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    rich_tree(root, outside)
    return root, outside


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def same(found: dict[str, os.stat_result], expected: dict[str, os.stat_result]) -> None:
    assert sorted(found) == sorted(expected)
    assert all(found[rel] == expected[rel] for rel in expected)


def test_the_walk_lists_what_os_walk_lists_and_nothing_outside(trees: tuple[Path, Path]) -> None:
    root, _ = trees
    fds = open_fds()
    found = survey(str(root))
    assert open_fds() == fds
    same(found, reference(root))
    assert "out_link" in found and stat.S_ISLNK(found["out_link"].st_mode)
    assert not any(rel.startswith(("out_link/", "inside_link/", "a/b/.git/", "logs/")) for rel in found)
    assert "a/b/c/d/e/deep.py" in found and "new\nline.py" in found and os.fsdecode(b"bad\xffbyte/f.py") in found


@pytest.mark.parametrize("scandir_fd", [True, False])
def test_each_folder_lists_its_entries_in_name_order(
    trees: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, scandir_fd: bool
) -> None:
    """The seal's digest reads the stats in sorted order: made in about that order, it is twice as fast."""
    root, _ = trees
    monkeypatch.setattr(agent_files, "_SCANDIR_FD", scandir_fd)
    order = list(survey(str(root)))
    for folder in {rel.rpartition("/")[0] for rel in order}:
        names = [rel for rel in order if rel.rpartition("/")[0] == folder]
        assert names == sorted(names)
    folders = list(dict.fromkeys(rel.rpartition("/")[0] for rel in order))  # in the order first met
    assert folders == sorted(folders, key=lambda f: f.split("/")) and len(folders) > 5


def test_python_3_6_lists_a_descriptor_with_listdir_to_the_same_result(
    trees: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """os.scandir takes a descriptor from python 3.7 on; the host's python3 may be 3.6."""
    root, _ = trees
    monkeypatch.setattr(agent_files, "_SCANDIR_FD", False)
    fds = open_fds()
    same(survey(str(root)), reference(root))
    assert open_fds() == fds


@pytest.mark.parametrize("max_open", [1, 2, 3])
def test_a_tree_deeper_than_max_open_is_walked_whole_with_at_most_max_open_plus_one_descriptors(
    trees: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, max_open: int
) -> None:
    root, _ = trees
    for rel in ["a/b/c/d/e/f/g/h/i.py", "a/b/c/d/e/f2/j.py", "a/b/c/k.py", "a/b/c2/l.py", "a/z/m.py"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    monkeypatch.setattr(agent_files, "MAX_OPEN", max_open)
    fds, most = open_fds(), [0]
    listing = agent_files._listing

    def counted(fd: int, prefix: str, out: dict[str, os.stat_result]) -> list[str]:
        most[0] = max(most[0], len(open_fds() - fds))
        return listing(fd, prefix, out)

    monkeypatch.setattr(agent_files, "_listing", counted)
    same(survey(str(root)), reference(root))
    assert open_fds() == fds
    assert 2 <= most[0] <= max_open + 1


@pytest.mark.parametrize("max_open", [32, 1])
def test_a_walk_that_fails_midway_closes_every_descriptor(
    trees: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, max_open: int
) -> None:
    root, _ = trees
    monkeypatch.setattr(agent_files, "MAX_OPEN", max_open)  # 1: some of the walk's folders closed already
    listing, calls = agent_files._listing, []

    def failing(fd: int, prefix: str, out: dict[str, os.stat_result]) -> list[str]:
        calls.append(prefix)
        if prefix.count("/") == 3:  # three folders deep: four descriptors open
            raise MemoryError("planted")
        return listing(fd, prefix, out)

    monkeypatch.setattr(agent_files, "_listing", failing)
    fds = open_fds()
    with pytest.raises(MemoryError):
        survey(str(root))
    assert open_fds() == fds and calls[-1] == "a/b/c/"


def test_a_folder_swapped_for_a_link_out_of_the_root_mid_walk_is_not_followed(
    trees: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listed as a folder, then replaced by a link to a folder outside before it is entered: a
    path-based walk would list the outside files as the tree's."""
    root, outside = trees
    listing = agent_files._listing

    def swapping(fd: int, prefix: str, out: dict[str, os.stat_result]) -> list[str]:
        folders = listing(fd, prefix, out)
        if prefix == "" and "a" in folders:
            os.rename(root / "a", root / "a.away")
            os.symlink(outside, root / "a")
        return folders

    monkeypatch.setattr(agent_files, "_listing", swapping)
    fds = open_fds()
    found = survey(str(root))
    assert open_fds() == fds
    assert "a/secret.py" not in found and not any(rel.startswith("a/") for rel in found)
    assert "a.py" in found and "x/.hidden" in found  # the rest of the tree is walked


def test_an_entry_gone_after_its_folder_was_listed_is_skipped(
    trees: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = trees
    scandir = os.scandir

    class Vanishing:
        """os.scandir of one folder, whose a.py is deleted once it has been listed."""

        def __init__(self, fd: int) -> None:
            self.listed = scandir(fd)

        def __enter__(self) -> Iterator[os.DirEntry[str]]:
            return self.entries()

        def entries(self) -> Iterator[os.DirEntry[str]]:
            yield from self.listed
            if (root / "a.py").exists():
                (root / "a.py").unlink()

        def __exit__(self, *exc: object) -> None:
            self.listed.close()

    monkeypatch.setattr(os, "scandir", Vanishing)
    found = survey(str(root))
    assert "a.py" not in found and "a-b.py" in found and "a/x.py" in found


def as_nobody(work: Callable[[], Any]) -> Any:
    """``work()``'s JSON result, run in a child that is not root (root reads any folder)."""
    if os.geteuid() != 0:
        return work()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(r)
            os.setgid(65534)
            os.setuid(65534)
            os.write(w, json.dumps(work()).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def test_an_unreadable_folder_is_left_out_and_no_descriptor_is_left_open() -> None:
    base = Path(tempfile.mkdtemp(prefix="pcwalk-"))  # not under pytest's root-only folder: nobody reads it
    try:
        base.chmod(0o755)
        for rel in ["ok/a.py", "locked/b.py", "locked/sub/c.py", "z.py"]:
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            (base / rel).write_text(rel)
            (base / rel).parent.chmod(0o755)
        (base / "locked").chmod(0o300)  # may be entered, not listed

        def walk() -> tuple[list[str], bool]:
            fds = open_fds()
            found = sorted(survey(str(base)))
            return found, open_fds() == fds

        found, closed = as_nobody(walk)
        assert found == ["ok/a.py", "z.py"]
        assert closed
    finally:
        (base / "locked").chmod(0o755)
        shutil.rmtree(base)


def test_a_root_that_is_missing_or_a_file_lists_nothing(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    fds = open_fds()
    assert survey(str(tmp_path / "missing")) == {}
    assert survey(str(tmp_path / "f")) == {}
    assert open_fds() == fds


def test_the_seal_digest_of_a_walk_is_the_documented_one(trees: tuple[Path, Path]) -> None:
    """A seal written by an earlier agent stays valid: the digest is still the sha256 of the sorted
    paths, two NULs and their packed stat fields, for the walk and then the extras."""
    root, _ = trees
    os.utime(root / "a.py", ns=(1, 2))  # each field differs from the others
    os.utime(root / "logs/out.py", ns=(3, 4))
    walk, extras = survey(str(root)), {"logs/out.py": os.lstat(root / "logs/out.py")}
    h = hashlib.sha256()
    for part in (walk, extras):
        paths = sorted(part)
        h.update("\0".join(paths).encode("utf-8", "surrogateescape") + b"\0\0")
        for rel in paths:
            st = part[rel]
            h.update(struct.pack("<QqqqQ", st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    assert agent_seal.state_digest(walk, extras) == h.hexdigest()


@pytest.mark.parametrize("swapped", ["a", "a/b"])
def test_a_closed_folder_that_cannot_be_reopened_is_left_out_and_nothing_is_opened_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swapped: str
) -> None:
    """A folder closed to keep MAX_OPEN, then swapped for a link while the walk was deeper: its
    reopening fails (a link on the way), and what it had left to walk is left out, not looked
    for anywhere else (not in the current folder, whose ``d``/``e`` hold bait)."""
    root, outside, here = tmp_path / "root", tmp_path / "outside", tmp_path / "cwd"
    for rel in ["a/b/c/f1.py", "a/b/d/f2.py", "a/e/f3.py", "z.py"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    for base in (outside, here):
        for rel in ["b/d/evil.py", "d/evil.py", "e/evil.py"]:
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            (base / rel).write_text("evil")
    monkeypatch.chdir(here)
    monkeypatch.setattr(agent_files, "MAX_OPEN", 1)
    listing = agent_files._listing

    def swapping(fd: int, prefix: str, out: dict[str, os.stat_result]) -> list[str]:
        if prefix == "a/b/c/":  # a and a/b are closed by now
            os.rename(root / swapped, root / (swapped + ".away"))
            os.symlink(outside, root / swapped)
        return listing(fd, prefix, out)

    monkeypatch.setattr(agent_files, "_listing", swapping)
    fds = open_fds()
    found = sorted(survey(str(root)))
    assert open_fds() == fds
    expected = ["a/b/c/f1.py", "z.py"] if swapped == "a" else ["a/b/c/f1.py", "a/e/f3.py", "z.py"]
    assert found == expected
