"""The walk's in-process merges (issue 38 req 8) give git merge-file's own answer: each case is
checked against a real ``git merge-file`` run on the same three texts."""

from __future__ import annotations

import subprocess
from pathlib import Path

from patchctl.patchsets.history.upstream import away, clash

OLD = "".join(f"line {i}\n" for i in range(40))


def _git(tmp: Path, mine: str, old: str, new: str) -> tuple[str, bool]:
    names = []
    for name, text in (("mine", mine), ("old", old), ("new", new)):
        (tmp / name).write_text(text)
        names.append(str(tmp / name))
    done = subprocess.run(["git", "merge-file", "-p", "-q", *names], capture_output=True, text=True)
    return done.stdout, done.returncode == 0


def test_an_upstream_change_away_from_the_edit_merges_in_process_as_git_does(tmp_path: Path) -> None:
    mine = OLD.replace("line 20\n", "line 20  # Uky\n")
    new = OLD.replace("line 3\n", "line 3 changed\nline 3b\n").replace("line 35\n", "")
    got = away(mine, OLD, new)
    assert got is not None
    assert (got, True) == _git(tmp_path, mine, OLD, new)


def test_a_stretch_upstream_moved_is_left_to_git(tmp_path: Path) -> None:
    """Upstream moved the code around the edit to the file's end: the stretch is found whole
    there, but git's diff deletes it at its old place, under the edit, and conflicts."""
    block = "".join(OLD.splitlines(keepends=True)[15:26])
    mine = OLD.replace("line 20\n", "line 20  # Uky\n")
    new = OLD.replace(block, "rewritten\n") + block
    assert away(mine, OLD, new) is None
    assert _git(tmp_path, mine, OLD, new)[1] is False


def test_a_stretch_upstream_copied_elsewhere_is_left_to_git(tmp_path: Path) -> None:
    """Upstream rewrote the code under the edit and wrote the old code again further down, with
    the code after it: git conflicts on the rewrite; a match of the copy would not."""
    lines = OLD.splitlines(keepends=True)
    mine = OLD.replace("line 20\n", "line 20  # Uky\n")
    new = "".join(lines[:15]) + "rewritten\n" + "".join(lines[26:]) + "".join(lines[10:26])
    assert away(mine, OLD, new) is None
    assert _git(tmp_path, mine, OLD, new)[1] is False


def test_an_upstream_change_next_to_the_edit_is_left_to_git(tmp_path: Path) -> None:
    mine = OLD.replace("line 20\n", "line 20  # Uky\n")
    new = OLD.replace("line 18\n", "line 18 changed\n")
    assert away(mine, OLD, new) is None
    assert _git(tmp_path, mine, OLD, new)[1] is True


def test_a_rewrite_of_the_edited_line_is_a_conflict_told_in_process(tmp_path: Path) -> None:
    mine = OLD.replace("line 20\n", "line 20  # Uky\n")
    new = OLD.replace("line 20\n", "line twenty\n")
    assert clash(mine, OLD, new)
    assert _git(tmp_path, mine, OLD, new)[1] is False


def test_an_upstream_change_between_two_hunks_of_one_edit_is_no_sure_conflict(tmp_path: Path) -> None:
    """The lines between two hunks of the edit are the edit's unchanged context, not its change."""
    mine = OLD.replace("line 10\n", "line 10  # Uky\n").replace("line 30\n", "line 30  # Uky\n")
    new = OLD.replace("line 20\n", "line twenty\n")
    assert not clash(mine, OLD, new)
    assert _git(tmp_path, mine, OLD, new)[1] is True


def test_the_same_change_on_both_sides_is_no_sure_conflict(tmp_path: Path) -> None:
    mine = OLD.replace("line 20\n", "line 20  # Uky\n")
    assert not clash(mine, OLD, mine)
    assert _git(tmp_path, mine, OLD, mine) == (mine, True)


def test_a_line_swapped_next_to_the_edit_is_left_to_git(tmp_path: Path) -> None:
    """Upstream swapped the line above the edit with a far one: every line still occurs once."""
    mine = OLD.replace("line 20\n", "line 20  # Uky\n")
    new = OLD.replace("line 19\n", "SWAP\n").replace("line 35\n", "line 19\n").replace("SWAP\n", "line 35\n")
    assert away(mine, OLD, new) is None
    assert _git(tmp_path, mine, OLD, new)[1] is False


def test_a_copy_of_the_code_around_the_edit_is_left_to_git(tmp_path: Path) -> None:
    """Upstream appended a copy of the lines around the edit: which copy is the edit's is git's call."""
    lines = OLD.splitlines(keepends=True)
    mine = OLD.replace("line 20\n", "line 20  # Uky\n")
    new = OLD + "".join(lines[19:22])
    assert away(mine, OLD, new) is None
    assert _git(tmp_path, mine, OLD, new) == (mine + "".join(lines[19:22]), True)
