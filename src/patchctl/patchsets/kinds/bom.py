"""A UTF-8 byte-order mark, kept where it was.

Python compiles a file that starts with a BOM, but ``ast.parse`` of its text refuses U+FEFF and
libcst drops it silently. So a kind that edits a file in place sees the text without its BOM,
and the BOM is put back in front of what the kind writes: the file keeps a byte no diff would
show it lost. A kind that ships a whole file (add-file) writes the bytes it ships, BOM or not.
"""

from __future__ import annotations

from typing import Any

from patchctl.patchsets.kinds.base import Check, Context, Edit, PatchKind
from patchctl.patchsets.model import Patch
from patchctl.records import replace

BOM = "\ufeff"


def strip_bom(text: str | None) -> str | None:
    return text[1:] if text is not None and text.startswith(BOM) else text


class KeepBom:
    """``kind`` with the BOM taken off before it reads a file and put back on what it writes."""

    def __init__(self, kind: PatchKind) -> None:
        self._kind = kind

    def __getattr__(self, name: str) -> Any:  # name, description, params_schema, parse_params, ...
        return getattr(self._kind, name)

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        return self._kind.check(strip_bom(text), patch, ctx)

    def apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        return _keep(text, self._kind.apply(strip_bom(text), patch, ctx))

    def revert(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        return _keep(text, self._kind.revert(strip_bom(text), patch, ctx))


def _keep(text: str | None, edit: Edit) -> Edit:
    if text is None or not text.startswith(BOM) or edit.text is None:
        return edit
    return replace(edit, text=BOM + edit.text)
