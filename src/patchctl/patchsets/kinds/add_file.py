"""add-file: a file shipped inside the patchset, written into the tree with its mode."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any, ClassVar

from patchctl.confine import relative_inside
from patchctl.errors import ManifestError
from patchctl.patchsets.kinds.base import Check, Context, Edit, EditStatus
from patchctl.patchsets.model import Patch, Presence
from patchctl.quoting import quote_path
from patchctl.records import record
from patchctl.schema import Field, Schema


@record(frozen=True)
class Params:
    #: the shipped file's path relative to the patchset directory
    source: str
    #: its content (read once when the manifest loads)
    content: str
    #: permission bits, e.g. 0o755 for scripts
    mode: int
    #: what to do when the tree already has a different file there: conflict | keep
    existing: str


class AddFile:
    name: ClassVar[str] = "add-file"
    description: ClassVar[str] = "Add a file shipped in the patchset, with its mode."
    creates_target: ClassVar[bool] = True
    params_schema: ClassVar[Schema] = {
        "source": Field(str, True, 'the file inside the patchset directory, e.g. "files/QUICK_FIX.md"'),
        "mode": Field(str, False, 'octal permission bits such as "0755"'),
        "existing": Field(str, False, '"conflict" or "keep"', choices=("conflict", "keep")),
    }

    def parse_params(self, raw: dict[str, Any], patchset_root: Path, manifest: Path, patch_id: str) -> Params:
        problem = relative_inside(raw["source"])
        if problem:
            raise ManifestError(
                manifest,
                "params.source",
                f"{raw['source']!r} {problem}",
                "ship the file inside the patchset directory and name it relative to it",
                patch_id,
            )
        src = patchset_root / raw["source"]
        real_root = patchset_root.resolve()
        if real_root not in src.resolve().parents:  # a symlink to /etc/passwd would be shipped into the tree
            raise ManifestError(
                manifest,
                "params.source",
                f"{raw['source']!r} leads out of the patchset folder through a symlink (to {src.resolve()})",
                "ship the file inside the patchset directory and name it relative to it",
                patch_id,
            )
        if src.is_dir():
            raise ManifestError(
                manifest,
                "params.source",
                f"{src} is a folder, not a file",
                "name the file to ship, e.g. files/QUICK_FIX.md",
                patch_id,
            )
        if not src.is_file():
            raise ManifestError(
                manifest,
                "params.source",
                f"{src} does not exist",
                "ship the file in the patchset directory or fix the path",
                patch_id,
            )
        try:
            mode = int(raw.get("mode", "0644"), 8)
        except ValueError:
            raise ManifestError(
                manifest, "params.mode", f"{raw['mode']!r} is not octal", 'write it like "0755"', patch_id
            ) from None
        if mode & ~0o7777:
            raise ManifestError(manifest, "params.mode", "is out of range", 'write it like "0644"', patch_id)
        return Params(raw["source"], src.read_text(encoding="utf-8"), mode, raw.get("existing", "conflict"))

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        p: Params = patch.params
        if text is None:
            return Check(Presence.MISSING, f"{ctx.path} does not exist")
        owned = frozenset(range(1, text.count("\n") + 2))
        if text == p.content:
            return Check(Presence.PRESENT, f"{ctx.path} matches the shipped file", owned)
        import difflib  # here: only a file that differs has a diff to show (issue 39.13)

        diff = "\n".join(
            difflib.unified_diff(p.content.splitlines(), text.splitlines(), p.source, quote_path(ctx.path), lineterm="")
        )
        return Check(Presence.MODIFIED, f"{ctx.path} differs from the shipped {p.source}", owned, diff)

    def apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        if text is None:
            return Edit(
                EditStatus.CHANGED, f"{ctx.path} added (mode {stat.filemode(p.mode | stat.S_IFREG)})", p.content, p.mode
            )
        if p.existing == "keep":
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} already exists with other content; kept as it is")
        import difflib  # here: only a file that differs has a diff to show (issue 39.13)

        diff = "\n".join(
            difflib.unified_diff(p.content.splitlines(), text.splitlines(), p.source, quote_path(ctx.path), lineterm="")
        )
        return Edit(
            EditStatus.CONFLICT,
            f"{ctx.path} already exists with other content; move it away or run with --only for the other patches",
            detail=diff,
        )

    def revert(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} is already gone")
        if text != p.content:
            return Edit(
                EditStatus.CONFLICT,
                f"{ctx.path} was edited after it was added; delete it yourself or restore the shipped content",
            )
        return Edit(EditStatus.CHANGED, f"{ctx.path} removed", None)
