"""delete-file: a file the fork deleted, deleted again on each upstream that still has it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from patchctl.errors import ManifestError
from patchctl.patchsets.kinds.base import Check, Context, Edit, EditStatus
from patchctl.patchsets.kinds.wholefile import keep, restore, sha256, short
from patchctl.patchsets.model import Patch, Presence
from patchctl.schema import Field, Schema


@dataclass(frozen=True)
class Params:
    #: sha256 of the file as upstream had it when the fork deleted it; None: not recorded
    sha256: str | None
    #: when upstream has changed the file since: "delete" it all the same, or "conflict"
    if_changed: str


class DeleteFile:
    name: ClassVar[str] = "delete-file"
    description: ClassVar[str] = "Delete a file the fork deleted."
    # the target is absent once the patch is applied, and any bytes may be deleted
    creates_target: ClassVar[bool] = True
    binary: ClassVar[bool] = True
    takes_lines_along: ClassVar[bool] = False
    params_schema: ClassVar[Schema] = {
        "sha256": Field(str, False, "the sha256 of the file as upstream had it"),
        "if_changed": Field(str, False, '"delete" or "conflict"', choices=("delete", "conflict")),
    }

    def parse_params(self, raw: dict[str, Any], patchset_root: Path, manifest: Path, patch_id: str) -> Params:
        digest = raw.get("sha256")
        if digest is not None and not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise ManifestError(
                manifest,
                "params.sha256",
                f"{digest!r} is not a sha256",
                "write 64 lowercase hex digits (sha256sum FILE)",
                patch_id,
            )
        return Params(digest, raw.get("if_changed", "delete"))

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        if text is None:
            return Check(Presence.PRESENT, f"{ctx.path} is deleted, as the patch has it")
        return Check(Presence.MISSING, f"{ctx.path} is still there ({short(sha256(text))})")

    def apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        if text is None:
            return Edit(EditStatus.UNCHANGED, f"{ctx.path} is already gone")
        now = sha256(text)
        if p.sha256 and now != p.sha256:
            if p.if_changed == "conflict":
                return Edit(
                    EditStatus.CONFLICT,
                    f"{ctx.path} changed upstream since the fork deleted it "
                    f"({short(now)} here, {short(p.sha256)} then); delete it by hand or set "
                    'if_changed = "delete"',
                )
            return Edit(
                EditStatus.CHANGED,
                f"{ctx.path} deleted (upstream changed it since the fork deleted it: "
                f"{short(now)}, was {short(p.sha256)})",
                None,
                undo=keep(text, ctx.mode_of(ctx.path) if ctx.mode_of else None),
            )
        return Edit(
            EditStatus.CHANGED,
            f"{ctx.path} deleted",
            None,
            undo=keep(text, ctx.mode_of(ctx.path) if ctx.mode_of else None),
        )

    def revert(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        if text is not None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} is there already")
        return restore(ctx.undo, ctx.path, f"{ctx.path} restored")
