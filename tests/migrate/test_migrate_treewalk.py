"""The source's walk (migrate/treewalk.py): rules decided per folder give exactly the files the
rules asked per path gave, and a folder swapped for a link is never walked through."""

from __future__ import annotations

import os
import stat
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from migrate_helpers import make_repo
from test_migrate_fileset import cluster

from patchctl.clusters import Cluster
from patchctl.migrate import fileset, treewalk
from patchctl.migrate.errors import TrackedFileLeftOut
from patchctl.migrate.exclusions import excluded
from patchctl.migrate.fileset import collect

#: names that some rule is about (the debris, host files, output folders, .git), and some it is not
NAMES = (
    "a",
    "b.py",
    ".git",
    ".github",
    ".patchctl",
    ".patchctl-journal",
    ".patchctl-journal.bak",
    "journal",
    "journal-1",
    "env.sh",
    "seal.json",
    "git_ignore.py",
    "x.patchctl-tmp",
    "logs",
    "checkpoints",
    "outputsx",
)
CLUSTERS = (
    cluster(),
    cluster(include=("logs", ".patchctl")),
    cluster(exclude=("a/*.py", "checkpoints", "*/env.sh")),
    cluster(include=("a/logs",), exclude=("a",)),
)


def per_path(root: Path, listed: dict[str, bool], c: Cluster, skip: set[str]) -> list[tuple[str, tuple[int, ...], str]]:
    """The walk as it was before (e5d3e9c): every rule asked of every path, each lstat'ed by its full name."""
    files, left_out = [], []
    for path in sorted(listed):
        if path in skip or path.startswith(fileset.PASSED_OVER) or path.endswith(fileset.DEBRIS_SUFFIX):
            continue
        why = excluded(path, c)
        if why is not None:
            if listed[path]:
                left_out.append((path, why))
            continue
        try:
            s = os.lstat(root / path)
        except FileNotFoundError:
            continue
        fields = (s.st_mode, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino)
        if stat.S_ISREG(s.st_mode) or stat.S_ISLNK(s.st_mode):
            files.append((path, fields, os.readlink(root / path) if stat.S_ISLNK(s.st_mode) else ""))
        elif listed[path]:
            left_out.append((path, treewalk._UNSENDABLE if stat.S_ISDIR(s.st_mode) else "not a file"))
    if left_out:
        raise TrackedFileLeftOut(left_out, c.name, c.source)
    return files


def outcome(walk: object) -> object:
    """What a walk gives: its files (path, stat fields, link target), or the tracked files it left out."""
    try:
        w = walk()  # type: ignore[operator]
    except TrackedFileLeftOut as e:
        return e.paths
    if isinstance(w, list):
        return w
    return [(p, tuple(s), w.links.get(p, "")) for p, s in w.stat_rows()]


paths_st = st.lists(
    st.tuples(
        st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map("/".join),
        st.sampled_from("ffffldm"),
        st.booleans(),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(paths_st, st.sampled_from(CLUSTERS), st.sampled_from(((), ("git_ignore.py",), ("a/git_ignore.py",))))
def test_rules_per_folder_give_the_files_rules_per_path_gave(
    entries: list[tuple[str, str, bool]], c: Cluster, generated: tuple[str, ...]
) -> None:
    """On a real tree: files, links, folders where git lists a file (a submodule), and listed
    files missing from disk ("m"), tracked or not."""
    listed: dict[str, bool] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for path, kind, tracked in entries:
            if path in listed or any(p.startswith(path + "/") or path.startswith(p + "/") for p in listed):
                continue  # a path both a file and a folder: no tree has it
            listed[path] = tracked
            full = root / path
            full.parent.mkdir(parents=True, exist_ok=True)
            if kind == "f":
                full.write_text(path)
            elif kind == "l":
                os.symlink("../elsewhere", full)
            elif kind == "d":
                full.mkdir()
        skip = {*fileset.HOST_FILES, *generated, ".git"}
        new = outcome(lambda: treewalk.walk_paths(root, listed, c, skip, fileset.PASSED_OVER, fileset.DEBRIS_SUFFIX))
        assert new == outcome(lambda: per_path(root, listed, c, skip))


def test_nested_sibling_folders_are_each_stat_ed_in_their_own(tmp_path: Path) -> None:
    """Folders left and entered at every depth (``a/x`` then ``a/y``, back up to ``a``, down
    again): each file is stat'ed in its own folder, none in the one open before."""
    files = ["a/x/1", "a/x/p/2", "a/x/q/3", "a/y/4", "a/y/p/5", "a/z", "b/x/6", "b/y/p/q/7", "b/z", "c"]
    for rel in files:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    listed = dict.fromkeys(files, True)
    open_before = os.listdir("/proc/self/fd")
    walked = treewalk.walk_paths(tmp_path, listed, cluster(), set(), fileset.PASSED_OVER, fileset.DEBRIS_SUFFIX)
    assert os.listdir("/proc/self/fd") == open_before  # every folder opened is closed
    assert [(p, tuple(s)) for p, s in walked.stat_rows()] == [
        (p, f) for p, f, _ in per_path(tmp_path, listed, cluster(), set())
    ]


def test_a_git_tree_walks_to_the_files_rules_per_path_gave(tmp_path: Path) -> None:
    """The same on a git tree, through fileset.walk (git's listing, the included files)."""
    root = make_repo(
        tmp_path / "r",
        {"a.py": "", ".github/ci.yml": "", "pkg/logs.py": "", ".patchctl/keep.txt": "", "a/it": ""},
        untracked={
            "logs/run.txt": "",
            "pkg/checkpoints/w.bin": "",
            "x.patchctl-tmp": "",
            ".patchctl-journal/j.json": "",
            ".patchctl-journal.bak": "",
            ".patchctl/env.sh": "",
            ".patchctl/journal-7/s": "",
            "gen/git_ignore.py": "",
        },
    )
    for c in (cluster(), cluster(include=("logs", ".patchctl-journal.bak")), cluster(exclude=("gen",))):
        walked = fileset.walk(root, c, ("gen/git_ignore.py",))
        listed = {p: True for p in walked.paths}  # those sent are among git's; per path, they all stay
        assert walked.paths == [p for p, _, _ in per_path(root, listed, c, {*fileset.HOST_FILES, ".git"})]
    assert fileset.walk(root, cluster(), ()).paths == [
        ".github/ci.yml",
        ".patchctl/keep.txt",
        "a.py",
        "a/it",  # ".git" less its first two letters: a name the root's rules must not reach
        "gen/git_ignore.py",
        "pkg/logs.py",
    ]


@pytest.mark.parametrize("include", [(), ("pkg",), ("a",)])
def test_a_folder_swapped_for_a_link_is_not_walked_through(tmp_path: Path, include: tuple[str, ...]) -> None:
    """A tracked folder replaced by a link out of the tree (``pkg``, and ``a/b`` deeper down): its
    files are gone, as git says, and nothing behind the link is sent, even where include names it;
    the link itself is a file to git, sent as a link."""
    root = make_repo(tmp_path / "r", {"top.py": "", "pkg/m.py": "", "a/b/c.py": "", "a/d.py": ""})
    outside = tmp_path / "outside"
    (outside / "b").mkdir(parents=True)
    for name in ("m.py", "secret.txt", "b/c.py", "b/secret.txt"):
        (outside / name).write_text("not the tree's\n")
    for folder, target in (("pkg", outside), ("a/b", outside / "b")):
        for f in (root / folder).iterdir():
            f.unlink()
        (root / folder).rmdir()
        os.symlink(target, root / folder)
    fs = collect(root, cluster(include=include))
    assert [(e.path, e.kind) for e in fs.entries] == [("a/b", "l"), ("a/d.py", "f"), ("pkg", "l"), ("top.py", "f")]
    assert {"a/b/c.py", "pkg/m.py"} <= set(fs.changed)  # git's deletions, never sent


def test_a_folder_swapped_for_a_file_is_a_deletion(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"top.py": "", "pkg/m.py": ""})
    (root / "pkg/m.py").unlink()
    (root / "pkg").rmdir()
    (root / "pkg").write_text("a file now\n")
    assert collect(root, cluster()).paths == ["pkg", "top.py"]


def test_a_path_climbing_out_of_the_tree_is_never_stat_ed(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("not the tree's\n")
    root = tmp_path / "r"
    (root / "sub").mkdir(parents=True)
    listed = {"../secret.txt": False, "sub/../../secret.txt": False, "sub//x": False}
    walked = treewalk.walk_paths(root, listed, cluster(), set(), fileset.PASSED_OVER, fileset.DEBRIS_SUFFIX)
    assert walked.paths == []


def test_the_newest_time_is_any_file_s_latest_mtime_or_ctime(tmp_path: Path) -> None:
    """Read from the packed fields: the mtime and ctime of each file, none of its other fields."""
    names = [f"{c}.py" for c in "abcdefg"]
    root = make_repo(tmp_path / "r", dict.fromkeys(names, ""))
    os.utime(root / "b.py", ns=(0, 1 << 62))  # an mtime far ahead of any ctime, in the second file
    walked = fileset.walk(root, cluster(), ())
    assert walked.newest() == 1 << 62
    os.utime(root / "b.py", ns=(0, 5))
    walked = fileset.walk(root, cluster(), ())
    assert walked.newest() == max(os.lstat(root / p).st_ctime_ns for p in names)
    assert treewalk.Walked(root, [], b"", {}).newest() == 0


def test_a_time_past_64_bits_of_nanoseconds_is_walked_clamped_and_its_change_still_seen(tmp_path: Path) -> None:
    """``utime`` sets an mtime of the year 2286 (10**19 ns, past 2**63): the walk keeps it clamped,
    the file is sent with its digest, and setting another such mtime is still a change (ctime)."""
    root = make_repo(tmp_path / "r", {"a.py": "x = 1\n", "far.py": "y = 2\n"})
    os.utime(root / "far.py", ns=(0, 10**19))
    walked = fileset.walk(root, cluster(), ())
    rows = dict(walked.stat_rows())
    assert (
        rows["far.py"].st_mtime_ns == (1 << 63) - 1 and rows["a.py"].st_mtime_ns == os.lstat(root / "a.py").st_mtime_ns
    )
    assert [e.path for e in collect(root, cluster()).entries] == ["a.py", "far.py"]
    time.sleep(0.01)
    os.utime(root / "far.py", ns=(0, 2 * 10**19))
    assert dict(fileset.walk(root, cluster(), ()).stat_rows())["far.py"] != rows["far.py"]
