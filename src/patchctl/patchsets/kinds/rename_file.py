"""rename-file: a file the fork moved, moved again on each upstream, with upstream's content.

The patch's target is the new path and ``source`` the old one. Only the move is this patch: the
fork's edits of the moved file are patches of their own on the new path, after this one in the
manifest, so an upstream that changed the old file keeps its changes through the move.

An upstream that has no old file at all (an sdist without ``examples/``) would leave those edits
nothing to apply to, so the patch may ship BASE's copy of the old file as ``fallback`` (checked
and confined as a blob is): apply then creates the new path from it, and the apply record notes
that, so revert deletes the file rather than move it back to a path upstream never had.

The record is not always there, nor trustworthy (it is a file in the tree): :meth:`RenameFile.revert_by`
checks what it says against the tree's last commit, and without a record takes that commit's
word alone. Where neither tells a created file from a moved one, revert refuses rather than
delete a file upstream had or move one to a path upstream never had.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from patchctl.confine import in_metadata, relative_inside
from patchctl.errors import ManifestError
from patchctl.patchsets.kinds.base import Check, Context, Edit, EditStatus
from patchctl.patchsets.kinds.blob import Shipped, load_shipped
from patchctl.patchsets.kinds.wholefile import sha256
from patchctl.patchsets.model import Patch, Presence
from patchctl.schema import Field, Schema


@dataclass(frozen=True)
class Params:
    #: the old path, relative to the tree
    source: str
    #: BASE's copy of the old file, to create the new path from where upstream has no old file
    fallback: Shipped | None = None


#: what the apply record keeps of a file created from the fallback, so revert deletes it
_CREATED = {"created_from": "fallback"}


class RenameFile:
    name: ClassVar[str] = "rename-file"
    description: ClassVar[str] = "Move a file to the path the fork moved it to (then edit it with other patches)."
    creates_target: ClassVar[bool] = True
    binary: ClassVar[bool] = True
    takes_lines_along: ClassVar[bool] = False
    params_schema: ClassVar[Schema] = {
        "source": Field(str, True, 'the old path relative to the tree, e.g. "scripts/old_name.sh"'),
        "fallback": Field(str, False, 'BASE\'s copy of the old file in the patchset, e.g. "files/scripts/old_name.sh"'),
        "fallback_sha256": Field(str, False, "the sha256 of the fallback file"),
        "fallback_mode": Field(str, False, 'octal permission bits of the fallback such as "0755"'),
    }

    def parse_params(self, raw: dict[str, Any], patchset_root: Path, manifest: Path, patch_id: str) -> Params:
        src = raw["source"]
        problem = relative_inside(src) or (
            f"is inside {in_metadata(src)}, which belongs to version control or patchctl" if in_metadata(src) else None
        )
        if problem:
            raise ManifestError(
                manifest,
                "params.source",
                f"{src!r} {problem}",
                "write the old path relative to the tree's root, inside it",
                patch_id,
            )
        if "fallback" not in raw:
            return Params(src)
        keys = ("fallback", "fallback_sha256", "fallback_mode")
        return Params(src, load_shipped(raw, keys, patchset_root, manifest, patch_id))

    def _source(self, p: Params, ctx: Context) -> str | None:
        return ctx.read(p.source) if ctx.read is not None and p.source != ctx.path else None

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        p: Params = patch.params
        old = self._source(p, ctx)
        if text is not None and old is None:
            return Check(
                Presence.PRESENT, f"{p.source} is moved to {ctx.path}", frozenset(range(1, text.count("\n") + 2))
            )
        if text is not None:
            return Check(
                Presence.MODIFIED, f"both {p.source} and {ctx.path} exist; the patch moves the first to the second"
            )
        if old is None:
            return Check(Presence.MISSING, f"neither {p.source} nor {ctx.path} exists")
        return Check(Presence.MISSING, f"{p.source} is not moved to {ctx.path} yet")

    def apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        old = self._source(p, ctx)
        if text is not None:
            return Edit(
                EditStatus.UNCHANGED if old is None else EditStatus.CONFLICT,
                f"{ctx.path} exists already" + (f" beside {p.source}; move one away" if old else ""),
            )
        if old is None and p.fallback is not None:
            return Edit(
                EditStatus.CHANGED,
                f"{ctx.path} created from the base's copy ({p.fallback.source}) because upstream has no {p.source}",
                p.fallback.content,
                p.fallback.mode,
                undo=dict(_CREATED),
            )
        if old is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{p.source} does not exist here, so there is nothing to move")
        mode = ctx.mode_of(p.source) if ctx.mode_of is not None else None
        return Edit(EditStatus.CHANGED, f"{p.source} moved to {ctx.path}", old, mode, also=((p.source, None, None),))

    def revert_by(
        self,
        undo: dict[str, Any] | None,
        recorded: bool,
        patch: Patch,
        ctx: Context,
        committed: Callable[[str], bool | None],
    ) -> dict[str, Any] | str | None:
        """The facts revert goes by (:attr:`Context.undo`), or why it must not guess.

        ``committed(path)`` says whether the tree's last commit has a file (None: no commit to ask).
        A commit with the old path and without the new one is upstream's tree the patch moved a
        file of; one with neither is an upstream without the old file, where apply created the new
        one. The record's word must agree with that commit's, and without a record the commit's word
        is the only one: a fallback patch on a tree without a commit cannot be told apart.
        """
        p: Params = patch.params
        if recorded and _resolved(undo, patch):
            return undo  # applied through a recorded resolution: revert goes back through it (kinds/replay.py)
        if recorded and undo not in (None, _CREATED):
            return f"the apply record holds {undo!r} for {ctx.path}, which apply never writes for a rename-file patch"
        if p.fallback is None:
            if undo == _CREATED:
                return f"the apply record says {ctx.path} was created from a fallback, and the patch has none"
            return None  # apply can only have moved it
        source, target = committed(p.source), committed(ctx.path)
        created = source is False and target is False
        moved = source is True and target is False
        if recorded and undo == _CREATED and moved:
            return (
                f"the apply record says {ctx.path} was created from the fallback, but the last commit has "
                f"{p.source}: apply moved it; restore the record (git checkout -- .patchctl/applied.json) "
                f"or move it back yourself (mv {ctx.path} {p.source})"
            )
        if recorded and undo is None and created:
            return (
                f"the apply record says {ctx.path} was moved from {p.source}, but the last commit has neither: "
                f"apply created it from the fallback; restore the record or delete {ctx.path} yourself"
            )
        if recorded:
            return undo
        if created or moved:
            return dict(_CREATED) if created else None
        return (
            f"{ctx.path}: no apply record (.patchctl/applied.json) and no git commit tell whether apply created it "
            f"from the fallback or moved it from {p.source}; delete it where upstream has no {p.source}, else "
            f"move it back (mv {ctx.path} {p.source}), then revert again"
        )

    def revert(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        if text is None or self._source(p, ctx) is not None:
            return Edit(EditStatus.CONFLICT, f"{ctx.path} is not where the patch moved {p.source}")
        if ctx.undo == _CREATED:
            if p.fallback is None or sha256(text) != p.fallback.sha256:
                return Edit(EditStatus.CONFLICT, f"{ctx.path} is no longer the base's copy apply created it from")
            return Edit(EditStatus.CHANGED, f"{ctx.path} removed: apply created it, upstream has no {p.source}", None)
        mode = ctx.mode_of(ctx.path) if ctx.mode_of is not None else None
        return Edit(EditStatus.CHANGED, f"{ctx.path} moved back to {p.source}", None, also=((p.source, text, mode),))


def _resolved(undo: dict[str, Any] | None, patch: Patch) -> bool:
    """Whether the record's word is the one a replayed resolution writes, ``{"resolution": KEY}``,
    for a resolution the patchset holds (a record naming another one is not trusted)."""
    if not (isinstance(undo, dict) and set(undo) == {"resolution"}):
        return False
    return any(r.context == undo["resolution"] for r in patch.resolutions)
