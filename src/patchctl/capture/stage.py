"""Capture's second step: the drafts written as a patchset directory in a scratch folder.

The proof loads this directory like any patchset, so what is proven is what gets published:
``publish`` renames this very folder into place.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from patchctl.capture import manifest
from patchctl.capture.model import Draft
from patchctl.patchsets.loader import MANIFEST


@dataclass(frozen=True)
class Header:
    """The ``[patchset]`` table, and FORK and BASE as each patch's ``origin`` names them."""

    name: str
    tag: str
    fork: str
    base: str


@dataclass(frozen=True)
class Staged:
    """A staged patchset: the folder and the drafts it holds, in manifest order."""

    #: the patchset directory; None when there was no patch to stage
    where: Path | None
    drafts: tuple[Draft, ...]
    header: Header


def stage(drafts: Sequence[Draft], header: Header, where: Path) -> Staged:
    """Write ``drafts`` as a patchset at ``where`` (a new path); with none, write nothing."""
    if not drafts:
        return Staged(None, (), header)
    where.mkdir(parents=True)
    for d in drafts:
        if d.content is not None:
            dest = where / d.shipped_as
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(d.content)
    head = {
        "name": header.name,
        "description": f"Captured from {header.fork} against {header.base} on "
        f"{_dt.date.today().isoformat()} by patchctl capture",
        "tag": header.tag,
        "format": 1,
    }
    ids = {d.id for d in drafts}
    # a partner the proof left out is no longer in the manifest: the note on it says so
    tables = [replace(d, needs=tuple(n for n in d.needs if n in ids)).table(header.fork, header.base) for d in drafts]
    (where / MANIFEST).write_text(manifest.render(head, tables), encoding="utf-8")
    return Staged(where, tuple(drafts), header)
