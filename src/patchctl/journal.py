"""A rollback journal, so a change of several files survives ``kill -9`` at any moment.

The protocol (the one SQLite's rollback journal and git's lock files follow):

1. ``staging``: the journal names every temp file, backup and directory it is about to make,
   *before* any of them exists; then the new contents are staged as temp files.
2. ``swapping``: each file that will be replaced or removed is first hard-linked into the
   journal's backup folder, then swapped (``os.replace`` / ``unlink``).
3. ``done``: the commit point. Everything after it is clean-up.

Whoever finds a journal (the next patchctl command on that tree, through recovery.py, or the
process itself when a signal or an error interrupts it) finishes a ``done`` journal and rolls
back any other. Every step of both is idempotent and decided from what is on disk, so an
interruption during recovery is recovered the same way. ``PATCHCTL_TEST_FAULT`` (see :func:`step`) lets the tests
kill the process at every step.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from patchctl.confine import not_a_real_folder
from patchctl.errors import ChangePending, JournalUnsafe

# re-exported: fsutil and capture.publish call journal.step() and journal.signals_held(), and the
# tests replace journal.step to cut every writer at each step
from patchctl.faults import signals_held as signals_held
from patchctl.faults import step as step

# the names, in a module of their own that verify and the lock import without this one
from patchctl.journal_paths import JOURNAL_DIR as JOURNAL_DIR
from patchctl.journal_paths import JOURNAL_FILE as JOURNAL_FILE
from patchctl.journal_paths import TMP_SUFFIX as TMP_SUFFIX

FORMAT = 1


@dataclass
class Op:
    """One file the change replaces, creates or removes."""

    #: relative to the root, already resolved through symlinks inside the tree
    path: str
    #: the staged new content (relative to the root), None when the file is removed
    tmp: str | None
    #: where the old file is kept while the change is not committed (relative to the journal)
    backup: str
    #: whether the file existed before the change
    existed: bool


@dataclass
class Journal:
    root: Path
    id: str
    command: str
    ops: list[Op] = field(default_factory=list)
    #: directories the change creates, outermost first (removed again on roll-back when empty)
    dirs: list[str] = field(default_factory=list)
    state: str = "staging"

    @property
    def folder(self) -> Path:
        return self.root / JOURNAL_DIR

    def save(self) -> None:
        """Replace the journal file atomically and durably: it is the source of truth."""
        doc = {
            "format": FORMAT,
            "id": self.id,
            "command": self.command,
            "state": self.state,
            "pid": os.getpid(),
            "ops": [asdict(op) for op in self.ops],
            "dirs": self.dirs,
        }
        tmp = self.folder / (JOURNAL_FILE + TMP_SUFFIX)
        step()
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        step()
        os.replace(tmp, self.folder / JOURNAL_FILE)
        _fsync_dir(self.folder)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def begin(root: Path, command: str) -> Journal:
    """Create the journal folder; refuse when an unrecovered journal is there."""
    # os.urandom(n).hex() is secrets.token_hex(n), without the start-up cost of secrets' hmac
    journal = Journal(root, os.urandom(4).hex(), command)
    check_folder(journal.folder, journal.folder)
    if (journal.folder / JOURNAL_FILE).exists():
        raise ChangePending(root)
    # one mkdir at the root, so there is never a half-made journal folder (an empty one left by a
    # kill right after this step holds nothing and is simply reused)
    step()
    journal.folder.mkdir(exist_ok=True)
    return journal


def temp_name(journal: Journal, rel: str) -> str:
    """A temp file's name beside its destination, known before the file exists."""
    head, _, name = rel.rpartition("/")
    return (head + "/" if head else "") + f".{name}.{journal.id}{TMP_SUFFIX}"


def rollback(journal: Journal) -> int:
    """Put every file back as it was and remove what the change created; return files restored."""
    root, restored = journal.root, 0
    with signals_held():
        for op in reversed(journal.ops):
            dest, backup = root / op.path, journal.folder / op.backup
            if op.existed and os.path.lexists(backup):
                step()
                os.replace(backup, dest)
                restored += 1
            elif not op.existed and journal.state != "staging" and os.path.lexists(dest):
                step()
                dest.unlink()
                restored += 1
            if op.tmp and os.path.lexists(root / op.tmp):
                step()
                (root / op.tmp).unlink()
        _remove_dirs(root, journal.dirs)
        finish(journal)
    return restored


def finish(journal: Journal) -> None:
    """Drop backups and the journal itself, then the folders it created that are empty.

    Folders emptied by deletions are pruned first, while the journal still says ``done``, so a
    kill during the pruning is finished by the next command instead of leaving them behind.
    """
    if journal.state == "done":
        prune_empty_parents(journal.root, [journal.root / op.path for op in journal.ops if op.tmp is None])
    for op in journal.ops:
        backup = journal.folder / op.backup
        if os.path.lexists(backup):
            step()
            backup.unlink()
    if (journal.folder / "backup").exists():
        step()
        import shutil  # here: shutil loads zlib, bz2 and lzma, which a command that writes nothing never needs

        shutil.rmtree(journal.folder / "backup")
    for name in (JOURNAL_FILE, JOURNAL_FILE + TMP_SUFFIX):
        if (journal.folder / name).exists():
            step()
            (journal.folder / name).unlink()
    _remove_dirs(journal.root, [JOURNAL_DIR, *journal.dirs])


def prune_empty_parents(root: Path, removed: list[Path]) -> None:
    """Remove directories emptied by deletions, up to (not including) ``root``."""
    root = root.resolve()
    for path in removed:
        parent = path.parent.resolve()
        while parent != root and root in parent.parents:
            if parent.is_dir():  # a folder already gone (an earlier, interrupted pass) is skipped
                try:
                    if any(parent.iterdir()):
                        break
                    step()
                    parent.rmdir()
                except OSError:
                    break
            parent = parent.parent


def _remove_dirs(root: Path, dirs: list[str]) -> None:
    """Remove the listed folders that are empty, deepest first; never ``root`` itself."""
    for rel in sorted(set(dirs), key=lambda d: d.count("/"), reverse=True):
        path = root / rel
        try:
            if path.is_dir() and not any(path.iterdir()):
                step()
                path.rmdir()
        except OSError:
            pass


def check_folder(journal_folder: Path, folder: Path) -> None:
    """``folder`` (the journal's, or its backup folder) is a real folder, so what it holds is in the tree."""
    problem = not_a_real_folder(folder)
    if problem:
        raise JournalUnsafe(journal_folder, problem)
