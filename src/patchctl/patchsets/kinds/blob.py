"""blob: a binary file shipped in the patchset (an image, a checkpoint shard), added or replacing upstream's.

The bytes are shipped under ``files/`` with their sha256 in the manifest, so a blob altered
after capture is refused when the patchset loads, and verify tells a target file that is not
the shipped one from one that is. Blobs over :data:`MAX_BLOB` are refused: a patchset is for
edits, not for weights.
"""

from __future__ import annotations

import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from patchctl import fsutil
from patchctl.confine import relative_inside
from patchctl.errors import ManifestError
from patchctl.patchsets.kinds.base import Check, Context, Edit, EditStatus
from patchctl.patchsets.kinds.wholefile import keep, restore, sha256, short
from patchctl.patchsets.model import Patch, Presence
from patchctl.schema import Field, Schema

#: the largest blob a patchset may ship
MAX_BLOB = 16 << 20


@dataclass(frozen=True)
class Params:
    source: str
    #: the shipped bytes, as the text pipeline carries them (surrogate escapes)
    content: str
    sha256: str
    mode: int
    #: sha256 of upstream's file the blob replaces; None: the blob is a new file
    replaces: str | None


def _digest(raw: dict[str, Any], key: str, manifest: Path, patch_id: str) -> str | None:
    value = raw.get(key)
    if value is not None and not re.fullmatch(r"[0-9a-f]{64}", value):
        raise ManifestError(
            manifest,
            f"params.{key}",
            f"{value!r} is not a sha256",
            "write 64 lowercase hex digits (sha256sum FILE)",
            patch_id,
        )
    return value


@dataclass(frozen=True)
class Shipped:
    """A file shipped in the patchset, loaded and checked against its sha256."""

    source: str
    #: the shipped bytes, as the text pipeline carries them (surrogate escapes)
    content: str
    sha256: str
    mode: int


def load_shipped(
    raw: dict[str, Any], keys: tuple[str, str, str], patchset_root: Path, manifest: Path, patch_id: str
) -> Shipped:
    """The file that ``raw[keys[0]]`` names inside the patchset, refused unless it stays inside the
    patchset (no ``..``, no symlink out), is at most :data:`MAX_BLOB` and matches ``raw[keys[1]]``;
    ``raw[keys[2]]`` its octal mode. Shared by every kind that ships bytes (blob, rename-file's
    fallback), so each is confined and checked the same way."""
    key, sha_key, mode_key = keys
    src = raw[key]
    path = patchset_root / src
    problem = relative_inside(src)
    if problem is None and patchset_root.resolve() not in path.resolve().parents:
        problem = f"leads out of the patchset folder through a symlink (to {path.resolve()})"
    if problem is None and not path.is_file():
        problem = "is not a file in the patchset folder"
    if problem is None and path.stat().st_size > MAX_BLOB:
        problem = f"is {path.stat().st_size} bytes, over the {MAX_BLOB >> 20} MiB a blob may have"
    if problem:
        raise ManifestError(
            manifest,
            f"params.{key}",
            f"{src!r} {problem}",
            "ship the file inside the patchset directory and name it relative to it",
            patch_id,
        )
    data = path.read_bytes()
    want = _digest(raw, sha_key, manifest, patch_id)
    if want is None:
        raise ManifestError(
            manifest, f"params.{sha_key}", "is missing", f"write the sha256 of {src} (sha256sum FILE)", patch_id
        )
    if fsutil.sha256_bytes(data) != want:
        raise ManifestError(
            manifest,
            f"params.{sha_key}",
            f"does not match {src} (sha256 "
            f"{fsutil.sha256_bytes(data)[:12]}...): the shipped file was changed after capture",
            "ship the right file, or write its sha256 if the change is yours",
            patch_id,
        )
    try:
        mode = int(raw.get(mode_key, "0644"), 8)
    except ValueError:
        raise ManifestError(
            manifest, f"params.{mode_key}", f"{raw[mode_key]!r} is not octal", 'write it like "0644"', patch_id
        ) from None
    return Shipped(src, data.decode("utf-8", "surrogateescape"), want, mode & 0o7777)


class Blob:
    name: ClassVar[str] = "blob"
    description: ClassVar[str] = "Add or replace a binary file with bytes shipped in the patchset (sha256 checked)."
    creates_target: ClassVar[bool] = True
    binary: ClassVar[bool] = True
    takes_lines_along: ClassVar[bool] = False
    params_schema: ClassVar[Schema] = {
        "source": Field(str, True, 'the file inside the patchset directory, e.g. "files/docs/logo.png"'),
        "sha256": Field(str, True, "the sha256 of the shipped file"),
        "mode": Field(str, False, 'octal permission bits such as "0644"'),
        "replaces": Field(str, False, "the sha256 of upstream's file the blob replaces"),
    }

    def parse_params(self, raw: dict[str, Any], patchset_root: Path, manifest: Path, patch_id: str) -> Params:
        got = load_shipped(raw, ("source", "sha256", "mode"), patchset_root, manifest, patch_id)
        return Params(got.source, got.content, got.sha256, got.mode, _digest(raw, "replaces", manifest, patch_id))

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        p: Params = patch.params
        if text is None:
            return Check(Presence.MISSING, f"{ctx.path} does not exist")
        now = sha256(text)
        if now == p.sha256:
            return Check(Presence.PRESENT, f"{ctx.path} is the shipped {p.source}")
        if now == p.replaces:
            return Check(Presence.MISSING, f"{ctx.path} is still upstream's file")
        return Check(
            Presence.MODIFIED,
            f"{ctx.path} is neither the shipped {p.source} ({short(p.sha256)}) nor "
            f"the file it replaces ({short(p.replaces)}): it is {short(now)}",
        )

    def apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        how = stat.filemode(p.mode | stat.S_IFREG)
        if text is None and p.replaces is None:
            return Edit(EditStatus.CHANGED, f"{ctx.path} added ({how})", p.content, p.mode)
        if text is None:
            return Edit(
                EditStatus.CONFLICT,
                f"{ctx.path} does not exist here; the blob replaces upstream's file "
                f"({short(p.replaces)}); add it by hand if it still belongs",
            )
        now = sha256(text)
        if now == p.sha256:
            return Edit(EditStatus.UNCHANGED, f"{ctx.path} is the shipped {p.source} already")
        if now != p.replaces:
            return Edit(
                EditStatus.CONFLICT,
                f"{ctx.path} is {short(now)} here; the blob replaces "
                f"{short(p.replaces)}: upstream changed the file, choose one by hand",
            )
        return Edit(
            EditStatus.CHANGED,
            f"{ctx.path} replaced by {p.source}",
            p.content,
            p.mode,
            undo=keep(text, ctx.mode_of(ctx.path) if ctx.mode_of else None),
        )

    def revert(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        if text is None or sha256(text) != p.sha256:
            return Edit(EditStatus.CONFLICT, f"{ctx.path} is not the shipped {p.source}")
        if p.replaces is None:
            return Edit(EditStatus.CHANGED, f"{ctx.path} removed", None)
        return restore(ctx.undo, ctx.path, f"{ctx.path} restored to upstream's file")
