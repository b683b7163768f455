"""What the whole-file kinds (delete-file, rename-file, blob) share: a file as bytes, and its sha256.

These kinds read their target with ``binary`` (any bytes, carried losslessly through the text
pipeline as surrogate escapes, see :meth:`~patchctl.patchsets.reader.TreeReader.read`), and
reverting them puts back a file whose bytes the apply record keeps, up to :data:`UNDO_LIMIT`.
"""

from __future__ import annotations

from typing import Any

from patchctl import fsutil
from patchctl.patchsets.kinds.base import Edit, EditStatus
from patchctl.patchsets.reader import to_bytes

#: the largest file whose bytes the apply record keeps for revert (the record is one JSON file)
UNDO_LIMIT = 1 << 20


def sha256(text: str) -> str:
    return fsutil.sha256_bytes(to_bytes(text))


def keep(text: str, mode: int | None = None) -> dict[str, Any]:
    """What the record keeps of a file apply removes or replaces: its bytes when small enough, and
    its permission bits."""
    kept: dict[str, Any] = {"text": text} if len(to_bytes(text)) <= UNDO_LIMIT else {"sha256": sha256(text)}
    return {**kept, "mode": mode} if mode is not None else kept


def restore(undo: dict[str, Any] | None, path: str, reason: str) -> Edit:
    """The file apply removed or replaced, put back from the record. With no record (the patch was
    found applied, never recorded) there is nothing to restore from: not applied, not a failure."""
    if undo is None:
        return Edit(
            EditStatus.NOT_APPLICABLE,
            f"no apply record holds {path}'s bytes, so it is left as it is; git checkout -- {path} restores it",
        )
    if "text" not in undo:
        return Edit(
            EditStatus.CONFLICT,
            f"{path} was over {UNDO_LIMIT >> 20} MiB, so the apply record keeps only "
            f"its sha256; restore it yourself (git checkout -- {path})",
        )
    return Edit(EditStatus.CHANGED, reason, undo["text"], undo.get("mode"))


def short(digest: str | None) -> str:
    return f"sha256 {digest[:12]}" if digest else "no file"
