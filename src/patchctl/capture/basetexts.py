"""Capture's BASE texts kept beside the manifest: what the 3-way fallback merges a patch from.

Written by the proof into each folder it stages, for that folder's patches (so the proof on
BASE places a merge-only text hunk as apply does anywhere else), and so for the proven patches
only in the folder that :mod:`~patchctl.capture.publish` swaps in: ``--out`` gets them in the
same rename (:mod:`~patchctl.patchsets.bases` for the layout and how it is read back).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from patchctl.capture.model import Draft
from patchctl.capture.sources import Tree
from patchctl.patchsets import bases
from patchctl.patchsets.kinds import KINDS


def keep(where: Path | None, drafts: Sequence[Draft], base: Tree) -> None:
    """Write under ``where`` the BASE text of each file a draft edits in place (UTF-8 text, at
    most :data:`~patchctl.patchsets.bases.MAX_BYTES`; others are left without a fallback)."""
    if where is None:
        return
    texts: dict[str, bytes] = {}
    for d in drafts:
        kind = KINDS[d.kind]
        if kind.creates_target or getattr(kind, "binary", False) or d.path in texts or d.path not in base.files:
            continue
        path = base.root / d.path
        if path.is_symlink() or not path.is_file() or path.stat().st_size > bases.MAX_BYTES:
            continue
        data = path.read_bytes()
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        texts[d.path] = data
    bases.write(where, texts)
