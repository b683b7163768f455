"""The registry of patch kinds. A manifest's ``kind`` must be one of its keys.

Kinds are imported on first use: a kind built on libcst costs ~200 ms to import, which
``patchctl verify`` on a patchset that does not use it should not pay.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import cast

from patchctl.patchsets.kinds.base import PatchKind
from patchctl.patchsets.kinds.bom import KeepBom
from patchctl.patchsets.kinds.replay import Replay

#: kind name -> "module:Class" under patchctl.patchsets.kinds
_REGISTRY = {
    "add-file": "add_file:AddFile",
    "blob": "blob:Blob",
    "config-key": "config_key:ConfigKey",
    "delete-file": "delete_file:DeleteFile",
    "guard-import": "guard_import:GuardImport",
    "keyword-rename": "keyword_rename:KeywordRename",
    "keyword-value": "keyword_value:KeywordValue",
    "prelude": "prelude:Prelude",
    "rename-file": "rename_file:RenameFile",
    "requirement": "requirement:Requirement",
    "shell-env": "shell_env:ShellEnv",
    "structural": "structural:Structural",
    "text-hunk": "text_hunk:TextHunk",
}


class _Kinds(Mapping[str, PatchKind]):
    def __init__(self) -> None:
        self._loaded: dict[str, PatchKind] = {}

    def __getitem__(self, name: str) -> PatchKind:
        if name not in self._loaded:
            module, cls = _REGISTRY[name].split(":")
            kind = getattr(importlib.import_module(f"{__name__}.{module}"), cls)()
            if getattr(kind, "proof_cached", False):  # its check reads only the text and the patch
                from patchctl.patchsets.proofs import Proven

                kind = cast(PatchKind, Proven(kind))  # an unchanged file is not parsed again
            if name != "structural":  # replays its recorded resolutions at its own anchors
                kind = cast(PatchKind, Replay(kind))
            if not kind.creates_target and not getattr(kind, "binary", False):
                from patchctl.patchsets.threeway import ThreeWay  # it reads kinds of this registry

                kind = cast(PatchKind, ThreeWay(kind))  # merged from its base text where its anchors fail
            # a kind that edits a file in place keeps its BOM (see bom.py); add-file ships bytes as they are
            self._loaded[name] = kind if kind.creates_target else cast(PatchKind, KeepBom(kind))
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(_REGISTRY))

    def __len__(self) -> int:
        return len(_REGISTRY)


KINDS: Mapping[str, PatchKind] = _Kinds()


def kind_names() -> list[str]:
    return sorted(_REGISTRY)
