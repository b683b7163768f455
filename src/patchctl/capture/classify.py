"""Capture's first step: FORK against BASE, file by file, as draft patches of the narrowest kind.

New files become add-file here; files both trees have go to :mod:`patchctl.capture.inplace`.
Each file is classified on its own and returns what it found; :func:`classify` only joins the
findings in file order and hands each file the ids taken before it, so ids stay unique.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Set
from pathlib import Path

from patchctl.capture import inplace, links, sources
from patchctl.capture.hunks import why_from
from patchctl.capture.model import Classified, Draft, Request, new_id


def classify(req: Request) -> Classified:
    """Every edit of FORK against BASE: the drafts to prove, the edits left out and the notes."""
    found: list[Classified] = []
    taken: frozenset[str] = frozenset()
    for rel in sorted(req.fork.files):
        found.append(_file(req, rel, taken))
        taken |= found[-1].ids
    found.append(_ignored(req, taken))
    if req.all_:
        gone = sorted(req.base.files - req.fork.files)
        if gone:
            found.append(Classified(notes=(f"{len(gone)} file(s) of BASE are not in FORK (first: {gone[0]}); "
                                           "no patch kind deletes files, so deletions are not captured",)))
    joined = Classified.join(found)
    return Classified(links.link(joined.drafts), joined.left_out, joined.notes)


def _file(req: Request, rel: str, taken: Set[str]) -> Classified:
    data = (req.fork.root / rel).read_bytes()
    if rel not in req.base.files:
        return _new_file(req, rel, data, taken)
    other = (req.base.root / rel).read_bytes()
    return inplace.changed(req, rel, other, data, taken) if other != data else Classified()


def _new_file(req: Request, rel: str, data: bytes, taken: Set[str]) -> Classified:
    tagged = req.rx.search(data.decode("utf-8", errors="replace")) is not None
    if not tagged and not req.all_:
        return Classified()
    if b"\0" in data[:8192]:
        return Classified(notes=(f"{rel}: binary file; add-file ships text files only, so it was not captured",))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Classified(notes=(f"{rel}: not UTF-8; add-file ships UTF-8 text only, so it was not captured",))
    lines = text.splitlines()
    tagged_at = [n for n, ln in enumerate(lines, 1) if req.rx.search(ln)]
    mode = stat.S_IMODE(os.stat(req.fork.root / rel).st_mode)
    stem = Path(rel).name.replace(".", "-") if Path(rel).suffix not in (".py",) else Path(rel).stem
    return Classified((Draft(new_id(stem, taken), "add-file", rel, None, tagged, f"add {rel}",
                             why_from(lines, tagged_at[:1], req.tag),
                             {"source": f"files/{rel}", "mode": f"{mode & 0o777:04o}"}, content=data),))


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
        found.append(Classified(notes=(f"{len(ignored.unread)} file(s) git ignores are over {limit} MiB and were "
                                       f"not searched for the tag (first: {ignored.unread[0]})",)))
    return Classified.join(found)
