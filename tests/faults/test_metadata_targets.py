"""Version-control metadata and patchctl's own folders are never targets, and add-file sources
stay in their patchset (issue 18, requirement 2)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from tests.faults.helpers import make_tree, one_error, run, snapshot

HOOK = '#!/bin/sh\necho pwned > "$(git rev-parse --show-toplevel)/../PWNED"\n'


def add_file_patchset(root: Path, target: str, source: str = "files/hook") -> Path:
    (root / "files").mkdir(parents=True, exist_ok=True)
    (root / "files" / "hook").write_text(HOOK)
    (root / "patchset.toml").write_text(f'''[patchset]
name = "hooky"
tag = "T"
[[patch]]
id = "hook"
title = "t"
why = "w"
kind = "add-file"
target = ["README.txt", "{target}"]
[patch.params]
source = "{source}"
mode = "0755"
''')
    return root


@pytest.mark.parametrize(
    "target, folder",
    [
        (".git/hooks/pre-commit", ".git"),
        (".git", ".git"),
        (".hg/hgrc", ".hg"),
        (".svn/entries", ".svn"),
        (".patchctl/applied.json", ".patchctl"),
        (".patchctl-journal/journal.json", ".patchctl-journal"),
        ("sub/.git/config", ".git"),
        (".Git/hooks/pre-commit", ".git"),
    ],
)
def test_a_target_in_metadata_is_a_manifest_error(tmp_path: Path, target: str, folder: str) -> None:
    tree = make_tree(tmp_path / "tree")
    ps = add_file_patchset(tmp_path / "ps", target)
    before = snapshot(tmp_path)
    for cmd in (["apply", "-t", str(tree)], ["list"]):
        code, out = run(*cmd, "-p", str(ps))
        assert code == 2, out
        assert one_error(out) == (
            f"error: {ps / 'patchset.toml'}: patch 'hook', key 'patch[0].target[1]': "
            f"{target!r} is inside {folder}, which belongs to version control or patchctl; "
            "write a path to a file of the tree itself"
        )
    assert snapshot(tmp_path) == before
    assert not (tree / ".git" / "hooks" / "pre-commit").exists()


def test_a_symlink_into_git_does_not_carry_a_target_there(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    os.symlink(".git/hooks", tree / "hooks")
    ps = add_file_patchset(tmp_path / "ps", "hooks/pre-commit")
    code, out = run("apply", "-t", str(tree), "-p", str(ps), "--force")
    assert code == 2, out
    assert one_error(out).startswith(
        f"error: {tree}: patch 'hook': refusing to touch 'hooks/pre-commit': it leads into .git through a symlink"
    )
    assert not (tree / ".git" / "hooks" / "pre-commit").exists()
    # and the user's next commit runs nothing of the patchset's
    subprocess.run(["git", "-C", str(tree), "commit", "-q", "--allow-empty", "-m", "next"], check=True)
    assert not (tmp_path / "PWNED").exists()


def test_an_add_file_source_symlinked_out_of_the_patchset_is_refused(tmp_path: Path) -> None:
    (tmp_path / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    ps = add_file_patchset(tmp_path / "ps", "ok.txt", source="files/passwd")
    os.symlink(tmp_path / "passwd", ps / "files" / "passwd")
    code, out = run("list", "-p", str(ps))
    assert code == 2, out
    assert one_error(out) == (
        f"error: {ps / 'patchset.toml'}: patch 'hook', key 'params.source': 'files/passwd' "
        f"leads out of the patchset folder through a symlink (to {tmp_path / 'passwd'}); "
        "ship the file inside the patchset directory and name it relative to it"
    )


def test_an_add_file_source_symlinked_inside_the_patchset_is_fine(tmp_path: Path) -> None:
    ps = add_file_patchset(tmp_path / "ps", "ok.txt", source="files/alias")
    os.symlink("hook", ps / "files" / "alias")
    assert run("list", "-p", str(ps))[0] == 0


def test_an_add_file_source_that_is_a_folder_is_called_a_folder(tmp_path: Path) -> None:
    ps = add_file_patchset(tmp_path / "ps", "ok.txt", source="files")
    code, out = run("list", "-p", str(ps))
    assert code == 2, out
    assert one_error(out) == (
        f"error: {ps / 'patchset.toml'}: patch 'hook', key 'params.source': {ps / 'files'} "
        "is a folder, not a file; name the file to ship, e.g. files/QUICK_FIX.md"
    )
