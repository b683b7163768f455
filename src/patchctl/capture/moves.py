"""Files FORK moved or deleted: rename-file (then the moved file's edits) and delete-file drafts.

A new file at least half like a file FORK deleted (by lines, as git's rename detection pairs
them; binary files only when identical) resembles it. It is a move only where FORK evidently
moved that file: it kept the file's name, or kept the file nearly whole (:data:`MOVED`). Carrying
a move as a move and then edits keeps what upstream later changes in the old file. A file that
merely resembles one (Search-R1's ``scripts/data_process/nq.py``, 76% like the
``examples/data_preprocess/math_dataset.py`` it deleted) is the fork's own new file: carried as a
move it would be made from upstream's example, which upstream later moved and rewrote, so it
could not be produced from verl 0.4.1 on (issue 38). It is an add-file, the likeness noted.
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Callable, Set
from pathlib import Path, PurePosixPath

from patchctl import fsutil
from patchctl.capture.model import Classified, Draft, Request, new_id
from patchctl.capture.othertypes import blob, is_binary
from patchctl.patchsets.kinds.blob import MAX_BLOB
from patchctl.patchsets.placement.pyparse import split_lines

#: how alike a new file must be to a deleted one to count as the same file moved (git's default)
SIMILAR = 0.5
#: how alike a new file of another name must be to count as the deleted file moved and renamed
MOVED = 0.9
#: files larger than this are paired only when identical (comparing their lines costs too much)
_COMPARE_LIMIT = 1 << 20


def renames(req: Request) -> dict[str, str]:
    """New path -> old path for each file FORK moved (and maybe edited)."""
    return {rel: old for rel, (old, similar) in alike(req).items() if moved(rel, old, similar)}


def moved(rel: str, old: str, similar: float) -> bool:
    """Whether a new file ``similar`` to the deleted ``old`` is that file moved, not a file of the fork's own."""
    return _same_name(old, rel) or similar >= MOVED


def alike(req: Request) -> dict[str, tuple[str, float]]:
    """New path -> (the deleted path it is most like, how alike) for each new file at least half
    like a file FORK deleted. Only new files capture would take (tagged, or any with ``--all``)
    are paired, each with its most alike deleted file."""
    gone = sorted(req.base.files - req.fork.files)
    if not gone:
        return {}
    out: dict[str, tuple[str, float]] = {}
    for rel in sorted(req.fork.files - req.base.files):
        data = (req.fork.root / rel).read_bytes()
        if not req.all_ and not req.rx.search(data.decode("utf-8", errors="replace")):
            continue
        best, score = None, SIMILAR
        for old in gone:
            if old in {o for o, _ in out.values()} or PurePosixPath(old).suffix != PurePosixPath(rel).suffix:
                continue
            similar = _likeness((req.base.root / old).read_bytes(), data)
            if similar >= score and (best is None or similar > score or _same_name(old, rel)):
                best, score = old, similar
        if best is not None:
            out[rel] = (best, score)
    return out


def _same_name(a: str, b: str) -> bool:
    return PurePosixPath(a).name == PurePosixPath(b).name


def _likeness(a: bytes, b: bytes) -> float:
    if a == b:
        return 1.0
    if is_binary(a) or is_binary(b) or max(len(a), len(b)) > _COMPARE_LIMIT:
        return 0.0
    m = difflib.SequenceMatcher(None, a.decode().splitlines(), b.decode().splitlines(), autojunk=False)
    return m.ratio() if m.real_quick_ratio() >= SIMILAR and m.quick_ratio() >= SIMILAR else 0.0


def renamed(
    req: Request,
    rel: str,
    old: str,
    data: bytes,
    taken: Set[str],
    changed: Callable[[Request, str, bytes, bytes, Set[str]], Classified],
) -> Classified:
    """The move of ``old`` to ``rel``, then FORK's edits of the moved file as patches on ``rel``."""
    before = (req.base.root / old).read_bytes()
    if before != data and (is_binary(before) or is_binary(data)):  # a binary file has no edits: ship it whole
        mode = stat.S_IMODE(os.stat(req.fork.root / rel).st_mode) & 0o777
        return Classified.join([_delete(old, before, taken), blob(req, rel, data, None, mode, taken)])
    pid = new_id(f"move-{Path(rel).name}", taken)
    # BASE's copy of the old file, for an upstream that has none (an sdist without examples/)
    fallback = (
        {
            "fallback": f"files/{old}",
            "fallback_sha256": fsutil.sha256_bytes(before),
            "fallback_mode": f"{stat.S_IMODE(os.stat(req.base.root / old).st_mode) & 0o777:04o}",
        }
        if len(before) <= MAX_BLOB
        else {}
    )
    move = Draft(
        pid,
        "rename-file",
        rel,
        None,
        bool(req.rx.search(data.decode("utf-8", errors="replace"))),
        f"move {old} to {rel}",
        "",
        {"source": old, **fallback},
        content=before if fallback else None,
        part=((1, 0), ""),
        base_lines=split_lines(before.decode("utf-8", "surrogateescape")),
    )
    edits = changed(req, rel, before, data, taken | {pid}) if before != data else Classified()
    return Classified.join([Classified((move,)), edits])


def deleted(req: Request, moved: set[str], taken: Set[str]) -> Classified:
    """delete-file drafts for BASE's files FORK no longer has (not moved); with ``--all`` only."""
    gone = sorted(req.base.files - req.fork.files - moved)
    if not gone:
        return Classified()
    if not req.all_:
        return Classified(
            notes=(
                f"{len(gone)} file(s) of BASE are not in FORK (first: {gone[0]}); a deletion "
                "carries no tag, so deletions are captured with --all only",
            )
        )
    found = []
    for rel in gone:
        found.append(_delete(rel, (req.base.root / rel).read_bytes(), taken))
        taken = taken | found[-1].ids
    return Classified.join(found)


def _delete(rel: str, data: bytes, taken: Set[str]) -> Classified:
    return Classified(
        (
            Draft(
                new_id(f"delete-{Path(rel).name}", taken),
                "delete-file",
                rel,
                None,
                False,
                f"delete {rel}",
                "",
                {"sha256": fsutil.sha256_bytes(data)},
            ),
        )
    )
