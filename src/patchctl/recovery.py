"""What the next command does about a change a ``kill -9`` or a crash interrupted: read the
journal it left (untrusted: refused when it names anything patchctl would not have written),
then finish it past the commit point or roll it back before it.

Kept apart from journal.py, which writes journals: this side reads one that anybody could have
edited, so the checks that confine it to the tree live here, beside the one reader.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from patchctl.confine import why_outside
from patchctl.errors import JournalDamaged, JournalUnsafe
from patchctl.journal import JOURNAL_DIR, JOURNAL_FILE, Journal, Op, check_folder, finish, rollback, temp_name


@dataclass(frozen=True)
class Recovery:
    """What the next command found and did about an interrupted change."""

    command: str
    #: "rolled back", "finished", or "cleaned up" (only the journal's own empty folder was left)
    action: str
    files: int

    def sentence(self, root: Path) -> str:
        if self.action == "cleaned up":
            return f"{root}: removed the empty journal an interrupted patchctl left; no file needed restoring"
        if self.action == "finished":
            return f"{root}: an interrupted `{self.command}` had written every file; finished its clean-up"
        return (
            f"{root}: an interrupted `{self.command}` was rolled back; "
            f"{self.files} file(s) restored, the tree is as it was before it"
        )


def load(root: Path) -> Journal | None:
    folder = root / JOURNAL_DIR
    path = folder / JOURNAL_FILE
    if path.is_symlink():
        raise JournalUnsafe(folder, f"{JOURNAL_FILE} is a symbolic link (to {os.readlink(path)})")
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        journal = Journal(root, doc["id"], doc["command"], [Op(**op) for op in doc["ops"]], doc["dirs"], doc["state"])
        _check_types(journal)
    except (ValueError, KeyError, TypeError) as exc:
        raise JournalDamaged(folder, str(exc)) from None
    _confine(journal)
    return journal


def _check_types(journal: Journal) -> None:
    texts = [journal.id, journal.command, *journal.dirs, *(x for op in journal.ops for x in (op.path, op.backup))]
    if (
        not all(isinstance(t, str) for t in texts)
        or journal.state not in ("staging", "swapping", "done")
        or not all(isinstance(op.tmp, (str, type(None))) and isinstance(op.existed, bool) for op in journal.ops)
    ):
        raise TypeError("a field has the wrong type or value")


def _confine(journal: Journal) -> None:
    """Refuse a journal naming anything patchctl would not have written: backups and temp files
    have fixed names (:func:`journal.temp_name`, ``fsutil._stage``), and every path, resolved through
    symlinks, is inside the tree. A crafted journal could otherwise make a plain ``verify``
    delete or move in files anywhere, or unlink through a symlink in the tree."""

    def refuse(problem: str) -> JournalUnsafe:
        return JournalUnsafe(journal.folder, problem)

    if not re.fullmatch(r"[0-9a-f]{8}", journal.id):
        raise refuse(f"its id {journal.id!r} is not one patchctl makes")
    check_folder(journal.folder, journal.folder / "backup")
    for rel in [op.path for op in journal.ops] + [op.tmp for op in journal.ops if op.tmp] + journal.dirs:
        problem = why_outside(journal.root, rel, follow_last=False)  # a symlink itself goes, never its target
        if problem:
            raise refuse(f"it names {rel!r}, which {problem}")
    for i, op in enumerate(journal.ops):
        if op.backup != f"backup/{i}":
            raise refuse(f"the backup name {op.backup!r} is not one patchctl writes")
        if op.tmp is not None and op.tmp != temp_name(journal, op.path):
            raise refuse(f"the temp name {op.tmp!r} is not the one patchctl writes for {op.path!r}")


def recover(root: Path) -> Recovery | None:
    """Finish (past the commit point) or roll back (before it) an interrupted change at ``root``."""
    folder = root / JOURNAL_DIR
    check_folder(folder, folder)
    if not folder.is_dir():
        return None
    journal = load(root)
    if journal is None:
        # killed before its first journal was saved, or after the last was removed: either way no
        # file of the tree is at stake, only the journal's own folder
        shutil.rmtree(folder)
        return Recovery("patchctl", "cleaned up", 0)
    if journal.state == "done":
        finish(journal)
        return Recovery(journal.command, "finished", len(journal.ops))
    return Recovery(journal.command, "rolled back", rollback(journal))
