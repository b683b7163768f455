"""The registry of patch kinds. A manifest's ``kind`` must be one of its keys."""

from __future__ import annotations

from patchctl.patchsets.kinds.add_file import AddFile
from patchctl.patchsets.kinds.base import PatchKind
from patchctl.patchsets.kinds.keyword_rename import KeywordRename
from patchctl.patchsets.kinds.prelude import Prelude
from patchctl.patchsets.kinds.shell_env import ShellEnv

KINDS: dict[str, PatchKind] = {k.name: k for k in (KeywordRename(), Prelude(), AddFile(), ShellEnv())}


def kind_names() -> list[str]:
    return sorted(KINDS)
