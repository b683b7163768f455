"""The registry of patch kinds. A manifest's ``kind`` must be one of its keys.

Kinds are imported on first use: a kind built on libcst costs ~200 ms to import, which
``patchctl verify`` on a patchset that does not use it should not pay.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterator, Mapping, Sequence
from types import ModuleType
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


#: TEMPORARY (issue 38 requirement 9, remove once the branches written against the old paths are
#: merged): the placement modules moved from ``kinds/`` to :mod:`patchctl.patchsets.placement`.
#: Importing them by their old names still works, lazily (no import cost until asked), and with
#: no file left at the old paths, so that git follows the renames when it merges.
_MOVED = {
    f"{__name__}.{m}": f"patchctl.patchsets.placement.{m}"
    for m in ("anchors", "candidate", "explain", "gaptext", "places", "pyparse", "syntax")
}


class _OldPaths:
    """A finder and loader for the old names (no importlib.abc base classes: importing those costs ~3 ms)."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        # a loader with create_module and exec_module, which is all importlib calls
        return importlib.util.spec_from_loader(name, self) if name in _MOVED else None  # type: ignore[arg-type] # (no load_module)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(_MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        """The module is the moved one, already run."""


sys.meta_path.append(_OldPaths())
