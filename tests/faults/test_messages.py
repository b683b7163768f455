"""Messages that name the real cause of a failed write (issue 18, requirement 6).

ENOSPC and EROFS on a real tmpfs (mounted here: the tests run as root), EFBIG under a real
``RLIMIT_FSIZE`` in a child process, ENOTDIR with a file where a folder should be. Each ends in
one line, exit 1, and a tree exactly as it was.
"""

from __future__ import annotations

import errno
import os
import re
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.faults.helpers import GIT_IDENT, make_tree, one_error, run, snapshot

from patchctl.oserrors import PERMISSIONS, describe

BIG = 200 * 1024  # bytes of the shipped file: more than the 64 KiB the tests allow


def big_patchset(root: Path, target: str = "big.txt") -> Path:
    (root / "files").mkdir(parents=True)
    (root / "files" / "big").write_text("x" * (BIG - 1) + "\n")
    (root / "patchset.toml").write_text(f'''[patchset]
name = "big"
tag = "T"
[[patch]]
id = "big"
title = "t"
why = "w"
kind = "add-file"
target = ["{target}"]
[patch.params]
source = "files/big"
''')
    return root


@pytest.fixture()
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs: a real file system that fills up."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], check=False, capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def test_enospc_says_the_disk_is_full_naming_the_file_system_and_the_space(tmp_path: Path, tmpfs: Path) -> None:
    tree = make_tree(tmpfs / "tree", git=False)
    ps = big_patchset(tmp_path / "ps")
    before = snapshot(tree)
    code, out = run("apply", "-t", str(tree), "-p", str(ps))
    assert code == 2, out
    line = one_error(out)
    assert re.fullmatch(
        rf"error: {re.escape(str(tree / 'big.txt'))}: cannot write \(the disk is full: "
        rf"{re.escape(str(tmpfs))} \(tmpfs\) has [0-9.]+ KiB free, this change needs 20[0-9.]+ KiB\); "
        rf"nothing was changed — free space on {re.escape(str(tmpfs))} and retry",
        line,
    ), line
    assert "permissions" not in line
    assert snapshot(tree) == before


def test_erofs_is_a_permissions_matter(tmp_path: Path, tmpfs: Path) -> None:
    tree = make_tree(tmpfs / "tree", git=False)
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    code, out = run("apply", "-t", str(tree), "-p", str(big_patchset(tmp_path / "ps")))
    assert code == 2, out
    assert one_error(out).endswith(
        f"{tree / 'big.txt'}: cannot write (its directory is read-only); nothing was changed — {PERMISSIONS}"
    )


def test_efbig_names_the_file_size_limit(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree", git=False)
    ps = big_patchset(tmp_path / "ps")
    before = snapshot(tree)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    done = subprocess.run(
        [sys.executable, "-m", "patchctl", "apply", "-t", str(tree), "-p", str(ps)],
        check=False,
        capture_output=True,
        text=True,
        preexec_fn=limit,
        env={**os.environ, **GIT_IDENT},
    )
    assert done.returncode == 2, done.stderr
    assert one_error(done.stdout + done.stderr) == (
        f"error: {tree / 'big.txt'}: cannot write (the file would exceed this process's file-size limit of 64.0 KiB "
        "(ulimit -f)); nothing was changed — raise the limit (ulimit -f unlimited) and retry"
    )
    assert snapshot(tree) == before


def test_enotdir_names_the_component_that_is_not_a_folder(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree", git=False)
    (tree / "docs").write_text("a file, not a folder\n")
    ps = big_patchset(tmp_path / "ps", target="docs/guide/big.txt")
    before = snapshot(tree)
    code, out = run("apply", "-t", str(tree), "-p", str(ps))
    assert code == 2, out
    assert one_error(out) == (
        f"error: {tree / 'docs' / 'guide'}: cannot write ({tree / 'docs'} is not a folder); "
        "nothing was changed — move that file away, or fix the path"
    )
    assert snapshot(tree) == before


def test_an_oserror_outside_a_journaled_write_is_one_line_naming_the_cause(tmp_path: Path) -> None:
    """``capture --out`` under a file: the error handler words it, not an internal error (exit 3)."""
    tree = make_tree(tmp_path / "tree", git=False)
    code, out = run("capture", "--from", str(tree), "--base", str(tree), "--out", str(tree / "README.md" / "a" / "ps"))
    assert code == 2, out
    assert one_error(out) == (
        f"error: {tree / 'README.md' / 'a'}: {tree / 'README.md'} is not a folder; move that file away, or fix the path"
    )


@pytest.mark.parametrize(
    "code",
    [errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.ENOTDIR, errno.EIO, errno.ENAMETOOLONG, errno.EMFILE, errno.ELOOP],
)
def test_fix_the_permissions_is_said_only_for_permission_errors(tmp_path: Path, code: int) -> None:
    cause, fix = describe(OSError(code, os.strerror(code), str(tmp_path / "f")))
    assert "permission" not in (cause + fix).lower()


@pytest.mark.parametrize("code", [errno.EACCES, errno.EPERM, errno.EROFS])
def test_permission_errors_say_fix_the_permissions(tmp_path: Path, code: int) -> None:
    assert describe(OSError(code, os.strerror(code), str(tmp_path / "f")))[1].startswith(PERMISSIONS)
