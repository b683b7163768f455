"""What the whole-file kinds (delete-file, rename-file, blob) share: a file as bytes, and its sha256.

These kinds read their target with ``binary`` (any bytes, carried losslessly through the text
pipeline as surrogate escapes, see :meth:`~patchctl.patchsets.reader.TreeReader.read`), and
reverting them puts back a file whose bytes the apply record keeps, up to :data:`UNDO_LIMIT`.
"""

from __future__ import annotations

from typing import Any

from patchctl import fsutil
from patchctl.patchsets.reader import to_bytes

#: the largest file whose bytes the apply record keeps for revert (the record is one JSON file)
UNDO_LIMIT = 1 << 20


def sha256(text: str) -> str:
    return fsutil.sha256_bytes(to_bytes(text))


def keep(text: str) -> dict[str, Any]:
    """What the record keeps of a file apply removes or replaces: its bytes when small enough."""
    return {"text": text} if len(to_bytes(text)) <= UNDO_LIMIT else {"sha256": sha256(text)}


def kept(undo: dict[str, Any] | None) -> str | None:
    return undo.get("text") if undo else None


def short(digest: str | None) -> str:
    return f"sha256 {digest[:12]}" if digest else "no file"
