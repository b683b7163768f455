"""A commit's tree written out from its blobs (capture's ref BASE, drift's and matrix's refs):
no filter runs, links stay inside, and a tree that names a path out of it is refused."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from tests.faults.test_git_hardening import Plant, build, sh

from patchctl import git


def mktree(repo: Path, *entries: str) -> str:
    """``git mktree``, which takes names git would never check out (``..``, ``.git``)."""
    done = subprocess.run(
        ["git", "-C", str(repo), "mktree"], input="".join(e + "\n" for e in entries), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def blob(repo: Path, data: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "hash-object", "-w", "--stdin"], input=data, capture_output=True, text=True
    )
    return done.stdout.strip()


def commit_tree(repo: Path, tree: str) -> str:
    return sh("-C", str(repo), "commit-tree", tree, "-m", "crafted").strip()


def test_the_tree_is_written_as_stored(tmp_path: Path) -> None:
    repo = build(tmp_path / "repo", "* filter=evil export-ignore\n")
    plant = Plant(tmp_path)
    plant.filters(repo)
    b, x = blob(repo, "print(1)\n"), blob(repo, "#!/bin/sh\n")
    sub = sh("-C", str(repo), "rev-parse", "HEAD").strip()
    inner = mktree(repo, f"100644 blob {b}\tm.py", f"120000 blob {blob(repo, 'm.py')}\tsame.py")
    tree = mktree(
        repo,
        f"040000 tree {inner}\tpkg",
        f"100755 blob {x}\trun.sh",
        f"160000 commit {sub}\tvendored",
        f"120000 blob {blob(repo, '/etc/passwd')}\tabsolute",
        f"120000 blob {blob(repo, '../../outside')}\tclimbs",
        f"120000 blob {blob(repo, '.')}\there",
        f"120000 blob {blob(repo, 'here/..')}\tthrough",  # reads as inside, lands above the tree
    )
    dest = git.export(repo, commit_tree(repo, tree), tmp_path / "out" / "tree")
    assert plant.fired() == []
    assert (dest / "pkg" / "m.py").read_text() == "print(1)\n"  # export-ignore and the filter: not applied
    assert (dest / "pkg" / "m.py").stat().st_mode & 0o777 == 0o644
    assert (dest / "run.sh").stat().st_mode & 0o777 == 0o755
    assert os.readlink(dest / "pkg" / "same.py") == "m.py"
    assert os.readlink(dest / "here") == "."
    assert (dest / "vendored").is_dir() and not any((dest / "vendored").iterdir())
    assert sorted(p.name for p in dest.iterdir()) == ["here", "pkg", "run.sh", "vendored"]


@pytest.mark.parametrize("top", ["..", ".git", ".GIT"])
def test_a_tree_naming_a_path_out_of_it_or_into_git_is_refused(tmp_path: Path, top: str) -> None:
    repo = build(tmp_path / "repo")
    x = blob(repo, "x\n")
    tree = mktree(repo, f"100644 blob {x}\tescaped.txt")
    for _ in range(3):
        tree = mktree(repo, f"040000 tree {tree}\t{top}")
    sha = commit_tree(repo, mktree(repo, f"040000 tree {tree}\tverl"))
    dest = tmp_path / "a" / "b"
    with pytest.raises(git.UnsafeTree) as caught:
        git.export(repo, sha, dest / "tree")
    rel = f"verl/{top}/{top}/{top}/escaped.txt"
    assert str(caught.value) == (
        f"{repo}: commit {sha[:12]} holds the path {rel!r}, which climbs out of the tree or into .git; "
        "patchctl reads no such tree: name another commit"
    )
    assert not [p for p in tmp_path.rglob("escaped.txt")]


def test_matrix_refuses_such_a_commit_in_one_line(tmp_path: Path) -> None:
    from tests.drift.helpers import invoke, patchset

    repo = build(tmp_path / "repo")
    init = blob(repo, "")
    x = blob(repo, "x\n")
    tree = mktree(repo, f"100644 blob {x}\tescaped.txt")
    tree = mktree(repo, f"040000 tree {tree}\t..", f"100644 blob {init}\t__init__.py")
    sh("-C", str(repo), "tag", "crafted", commit_tree(repo, mktree(repo, f"040000 tree {tree}\tverl")))
    done = invoke("matrix", "--repo", str(repo), "--versions", "crafted", "--patchset", str(patchset(tmp_path / "ps")))
    assert done.exit_code == 2
    assert len(done.output.strip().splitlines()) == 1 and "holds the path 'verl/../escaped.txt'" in done.output
