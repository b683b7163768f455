"""The names a tree's journal and its writers' temporary files go by, without the journal itself.

``verify`` and the tree's lock need only these names (to look for a journal, to name the lock
beside it, to spot a cut-off write's debris); :mod:`patchctl.journal`, with its dataclasses and
its writers' machinery, is imported by the commands that write (issue 39.13: every module a
``verify`` imports counts at its start-up).
"""

from __future__ import annotations

JOURNAL_DIR = ".patchctl-journal"
JOURNAL_FILE = "journal.json"
TMP_SUFFIX = ".patchctl-tmp"
