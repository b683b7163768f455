"""rsync's file list names a folder once where the folder holds only files migrate sends, and
never where it holds anything else: exactly the file set's paths still travel."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from migrate_fixtures import Site
from migrate_helpers import make_repo
from test_migrate_fileset import cluster

from patchctl.migrate import migrate
from patchctl.migrate.filelist import compact
from patchctl.migrate.fileset import collect

FILES = {
    "whole/a.py": "a = 1\n",
    "whole/deep/b.py": "b = 2\n",
    "ignored/c.py": "c = 3\n",
    "empty_below/d.py": "d = 4\n",
    "nested/e.py": "e = 5\n",
    "fifo/f.py": "f = 6\n",
    "outputs_in/g.py": "g = 7\n",
    "top.py": "t = 0\n",
}


def tree(tmp_path: Path) -> Path:
    """Folders of sent files, and folders that also hold what must stay here."""
    root = make_repo(tmp_path / "src", {".gitignore": "*.bin\n", **FILES})
    (root / "ignored" / "weights.bin").write_bytes(b"\0" * 16)  # ignored by git
    (root / "empty_below" / "void").mkdir()  # an empty folder: git lists nothing in it
    (root / "nested" / "repo" / ".git").mkdir(parents=True)  # a nested repository's .git
    os.mkfifo(root / "fifo" / "pipe")  # a special file
    (root / "outputs_in" / "logs").mkdir()
    (root / "outputs_in" / "logs" / "run.txt").write_text("an output, never sent\n")
    return root


def test_only_folders_of_sent_files_alone_are_named(tmp_path: Path) -> None:
    root = tree(tmp_path)
    paths = collect(root, cluster()).paths
    assert "outputs_in/logs/run.txt" not in paths
    listed = compact(root, paths)
    assert "whole" in listed and "whole/a.py" not in listed and "whole/deep" not in listed
    for folder in ("ignored", "empty_below", "nested", "fifo", "outputs_in"):
        assert folder not in listed, folder
    assert sorted(expand(root, listed)) == sorted(paths)


def expand(root: Path, listed: list[str]) -> list[str]:
    """What ``rsync -r --files-from`` sends for ``listed``: each folder's whole subtree."""
    out: list[str] = []
    for rel in listed:
        full = root / rel
        if full.is_dir() and not full.is_symlink():
            out += [str(p.relative_to(root)) for p in full.rglob("*") if not p.is_dir() or p.is_symlink()]
        else:
            out.append(rel)
    return out


@pytest.mark.usefixtures("rsync_installed")
def test_a_host_receives_exactly_the_file_set(site: Site, tmp_path: Path) -> None:
    root = tree(tmp_path)
    (host,) = migrate(site.cluster(aliases=["node1"]), root, ()).hosts
    assert host.verified
    there = site.root("node1")
    got = {str(p.relative_to(there)) for p in there.rglob("*") if p.is_file() and ".patchctl" not in p.parts}
    assert got == set(collect(root, cluster()).paths)
    assert not (there / "empty_below" / "void").exists() and not (there / "nested" / "repo").exists()
