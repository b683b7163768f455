"""Capture's first step: FORK against BASE, file by file, as draft patches of the narrowest kind.

New files become add-file (blob when binary) here, files FORK moved become rename-file followed by
their edits, and files FORK deleted delete-file (with ``--all``: a deletion carries no tag). Python
and shell files both trees have go to :mod:`patchctl.capture.inplace`, other files to
:mod:`patchctl.capture.othertypes` (configs by key and requirements by package through
:mod:`patchctl.capture.keyed`, text by hunk).
Each file is classified on its own and returns what it found; :func:`classify` only joins the
findings in file order and hands each file the ids taken before it, so ids stay unique.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Set
from pathlib import Path

from patchctl.capture import crossfile, inplace, links, moves, othertypes, sources
from patchctl.capture.hunks import why_from
from patchctl.capture.model import Classified, Draft, Request, new_id


def classify(req: Request) -> Classified:
    """Every edit of FORK against BASE: the drafts to prove, the edits left out and the notes."""
    found: list[Classified] = []
    taken: frozenset[str] = frozenset()
    alike = moves.alike(req)
    moved = {rel: old for rel, (old, similar) in alike.items() if moves.moved(rel, old, similar)}
    for rel in sorted(req.fork.files):
        found.append(_file(req, rel, taken, moved.get(rel), alike.get(rel)))
        taken |= found[-1].ids
    found.append(_ignored(req, taken))
    taken |= found[-1].ids
    found.append(moves.deleted(req, set(moved.values()), taken))
    joined = Classified.join(found)
    return Classified(crossfile.link(req, links.link(joined.drafts)), joined.left_out, joined.notes)


def _file(
    req: Request, rel: str, taken: Set[str], moved_from: str | None = None, like: tuple[str, float] | None = None
) -> Classified:
    data = (req.fork.root / rel).read_bytes()
    if moved_from is not None:
        return moves.renamed(req, rel, moved_from, data, taken, changed)
    if rel not in req.base.files:
        return _new_file(req, rel, data, taken, like)
    other = (req.base.root / rel).read_bytes()
    return changed(req, rel, other, data, taken) if other != data else Classified()


def changed(req: Request, rel: str, other: bytes, data: bytes, taken: Set[str]) -> Classified:
    """A file both trees have (or FORK moved), by its type."""
    if othertypes.is_binary(data) or othertypes.is_binary(other):
        return othertypes.blob(req, rel, data, other, _mode(req, rel), taken)
    if rel.endswith(".py"):
        return inplace.changed(req, rel, other, data, taken)
    text, base_text = data.decode("utf-8"), other.decode("utf-8")
    if rel.endswith(".sh") or (text.startswith("#!") and "sh" in text.split("\n", 1)[0]):
        shell = inplace.changed(req, rel, other, data, taken)
        if not shell.left_out:
            return shell
        # an edit shell-env cannot carry: the script's edits all go as text hunks, which carry any
        hunked = othertypes.changed_text(req, rel, base_text, text, taken)
        return Classified(hunked.drafts, hunked.left_out, shell.notes + hunked.notes)
    return othertypes.changed_text(req, rel, base_text, text, taken)


def _mode(req: Request, rel: str) -> int:
    return stat.S_IMODE(os.stat(req.fork.root / rel).st_mode) & 0o777


def _new_file(
    req: Request, rel: str, data: bytes, taken: Set[str], like: tuple[str, float] | None = None
) -> Classified:
    """An add-file; ``like``: the file of BASE it resembles, which FORK deleted, and how alike
    (a resemblance, not a move: :func:`~patchctl.capture.moves.moved`)."""
    if othertypes.is_binary(data):
        return othertypes.blob(req, rel, data, None, _mode(req, rel), taken)
    tagged = req.rx.search(data.decode("utf-8", errors="replace")) is not None
    if not tagged and not req.all_:
        return Classified()
    text = data.decode("utf-8")
    lines = text.splitlines()
    tagged_at = [n for n, ln in enumerate(lines, 1) if req.rx.search(ln)]
    mode = stat.S_IMODE(os.stat(req.fork.root / rel).st_mode)
    stem = Path(rel).name.replace(".", "-") if Path(rel).suffix not in (".py",) else Path(rel).stem
    similar = f" ({like[1]:.0%} like {like[0]} of BASE, which FORK deleted)" if like else ""
    notes = (
        (
            f"{rel}: a new file{similar}; captured as add-file, not a move of it: the name and most of "
            "the text differ, so it is the fork's own file and does not follow what upstream does to "
            f"{like[0]}",
        )
        if like
        else ()
    )
    return Classified(
        (
            Draft(
                new_id(stem, taken),
                "add-file",
                rel,
                None,
                tagged,
                f"add {rel}{similar}",
                why_from(lines, tagged_at[:1], req.tag),
                {"source": f"files/{rel}", "mode": f"{mode & 0o777:04o}"},
                content=data,
            ),
        ),
        notes=notes,
    )


def _ignored(req: Request, taken: Set[str]) -> Classified:
    """Tagged files git ignores in FORK are captured like any other, each with a note naming the
    ignore rule: git decides what FORK's tree is, but a tag says "this is my edit", and passing
    one over unseen loses it (issue 15)."""
    ignored = sources.ignored_tagged(req.fork.root, req.rx)
    found: list[Classified] = []
    for rel, rule in ignored.tagged.items():
        mine = _file(req, rel, taken)
        taken = taken | mine.ids
        ids = [d.id for d in mine.drafts]
        what = f"captured as {', '.join(ids)}" if ids else "not captured (the other line about it says why)"
        found += [mine, Classified(notes=(f"{rel}: git ignores it in FORK ({rule}), but it carries the tag: {what}",))]
    if ignored.unread:
        limit = sources.IGNORED_READ_LIMIT >> 20
        found.append(
            Classified(
                notes=(
                    f"{len(ignored.unread)} file(s) git ignores are over {limit} MiB and were "
                    f"not searched for the tag (first: {ignored.unread[0]})",
                )
            )
        )
    return Classified.join(found)
