"""What recovery.load refuses in a journal left behind, beside test_journal_unit's cases: a journal
is untrusted (anybody with write access to the tree could have written it), so every name in it
must be one patchctl itself writes, and every field of the type it writes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from patchctl import journal, recovery
from patchctl.errors import JournalDamaged, JournalUnsafe


def _left(tree: Path, **change: Any) -> None:
    """A ``done`` journal deleting ``pkg/a.py``, with ``change`` made to the journal or its op."""
    op = {"path": "pkg/a.py", "tmp": None, "backup": "backup/0", "existed": True}
    doc = {"format": 1, "id": "abcdef12", "command": "apply", "dirs": [], "state": "done", "ops": [op]}
    for key, value in change.items():
        (op if key in op else doc)[key] = value
    (tree / journal.JOURNAL_DIR).mkdir(parents=True)
    (tree / journal.JOURNAL_DIR / journal.JOURNAL_FILE).write_text(json.dumps(doc))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "tree" / "pkg").mkdir(parents=True)
    (tmp_path / "tree" / "pkg" / "a.py").write_text("a\n")
    return tmp_path / "tree"


def test_an_id_patchctl_never_makes_is_refused(tree: Path) -> None:
    """The id is part of every temp name: only the 8 hex digits begin draws."""
    _left(tree, id="ABCDEF12")
    with pytest.raises(JournalUnsafe, match="its id 'ABCDEF12' is not one patchctl makes"):
        recovery.load(tree)


def test_existed_that_is_not_a_boolean_is_damage(tree: Path) -> None:
    """``existed`` decides between restoring a backup and deleting: a string is never taken for it."""
    _left(tree, existed="no")
    with pytest.raises(JournalDamaged):
        recovery.load(tree)


def test_a_symlink_in_the_tree_is_named_as_itself_and_only_it_goes(tree: Path, tmp_path: Path) -> None:
    """Rolling back a file the change made, which is now a link leading out of the tree: the
    link is confined by its own path, so it goes and what it points to stays."""
    outside = tmp_path / "outside.py"
    outside.write_text("theirs\n")
    os.symlink(outside, tree / "pkg" / "link.py")
    _left(tree, path="pkg/link.py", existed=False, state="swapping")
    assert recovery.recover(tree) == recovery.Recovery("apply", "rolled back", 1)
    assert not os.path.lexists(tree / "pkg" / "link.py") and outside.read_text() == "theirs\n"
