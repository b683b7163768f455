"""structural: replace a run of Python statements, found by scope and neighbours, never by line.

The general kind ``patchctl capture`` writes for tagged edits that fit no narrower kind (a new
helper function, a changed default argument, an extra import, an edited line in a method). A
patch names:

- ``scope``: the qualified name of the enclosing class or function (``""`` for the module);
- ``blocks`` (optional): the headers of the ``for``/``while``/``if``/``with``/``try`` statements
  inside the scope whose body holds the change, outermost first, so that an edit deep in a loop
  is anchored in that loop rather than carrying the whole loop (issue 27);
- ``mode = "statements"``: ``above``/``below`` are the first lines of the untouched statements
  around the change (empty: the change starts/ends the scope's body); ``before`` is the exact
  text between them in the original, ``after`` the exact text the fork has there;
- ``mode = "header"``: the change is in the header of the definition ``scope`` names (its
  decorators through the colon); ``before``/``after`` are that header's text.

A place **fits** when its anchors read ``above`` and ``below`` (by text, else by syntax:
:mod:`patchctl.patchsets.placement.syntax`) and the text between is ``before`` or ``after``
(exactly, else as the same code). Where it holds the same code in other spelling, only the
statements the fork changed are written (:mod:`patchctl.patchsets.kinds.splice`). Every run of statements reading like
``below`` counts as an end, not only the nearest: the text replaced may itself hold one.
Where several places fit — the original at one and the change at another included — check,
apply and revert answer ambiguous rather than pick one, and apply refuses a change after which
its place could not be told apart again (issue 10: never confidently wrong).

``indent`` is the indentation the texts were captured at; where the scope now sits at another
depth the texts are re-indented. The original text is kept in the manifest, so revert needs
nothing else; where the tree's text differed from it only in spacing or comments, the record
keeps what was really there. See :mod:`patchctl.patchsets.placement.anchors` for the terms,
:func:`patchctl.patchsets.placement.locate` for how the fitting places are found and ranked, and
:mod:`patchctl.patchsets.kinds.structural_reasons` for how the answers are worded.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, ClassVar

from patchctl.errors import ManifestError, SourceSyntaxError
from patchctl.patchsets.kinds import imports, splice
from patchctl.patchsets.kinds import structural_reasons as reasons
from patchctl.patchsets.kinds.base import Check, Context, Edit, EditStatus
from patchctl.patchsets.model import Patch, Presence
from patchctl.patchsets.placement import Placement, gaptext, locate
from patchctl.patchsets.placement import anchors as st
from patchctl.patchsets.placement.places import Params
from patchctl.patchsets.placement.pyparse import split_lines
from patchctl.patchsets.placement.where import spans
from patchctl.records import replace
from patchctl.schema import Field, Schema

MODES = ("statements", "header")


class Structural:
    name: ClassVar[str] = "structural"
    description: ClassVar[str] = "Replace Python statements (or a definition's header) found by scope and neighbours."
    creates_target: ClassVar[bool] = False
    params_schema: ClassVar[Schema] = {
        "mode": Field(str, False, '"statements" or "header"', choices=MODES),
        "scope": Field(str, False, 'a qualified name such as "RayPPOTrainer.fit"; absent or "" for the module'),
        "above": Field(list, False, "first lines of the untouched statements above, nearest last", item=str),
        "below": Field(list, False, "first lines of the untouched statements below, nearest first", item=str),
        "indent": Field(str, False, "the indentation the texts were captured at"),
        "before": Field(str, False, "the original text (absent or empty for an insertion)"),
        "after": Field(str, False, "the text the change puts there (absent or empty for a deletion)"),
        "occurrence": Field(int, False, "which of several fitting places, counted from 1"),
        "blocks": Field(
            list, False, "headers of the statements inside scope whose body holds the change, outermost first", item=str
        ),
    }

    def parse_params(self, raw: dict[str, Any], patchset_root: Path, manifest: Path, patch_id: str) -> Params:
        p = Params(
            raw.get("mode", "statements"),
            raw.get("scope", ""),
            tuple(raw.get("above", ())),
            tuple(raw.get("below", ())),
            raw.get("indent", ""),
            raw.get("before", ""),
            raw.get("after", ""),
            raw.get("occurrence"),
            tuple(raw.get("blocks", ())),
        )
        if p.mode == "header" and not p.scope:
            raise ManifestError(
                manifest,
                "params.scope",
                "is empty, but a header belongs to a class or function",
                'name the definition, e.g. scope = "compute_score"',
                patch_id,
            )
        if p.before == p.after:
            raise ManifestError(
                manifest, "params.after", "equals params.before", "the patch must change something", patch_id
            )
        if p.occurrence is not None and p.occurrence < 1:
            raise ManifestError(
                manifest, "params.occurrence", "must be 1 or more", "count fitting places from 1", patch_id
            )
        return p

    # -- the three operations: the patch's own texts, else a recorded resolution's -----------

    @staticmethod
    def _resolved(patch: Patch) -> list[tuple[Patch, str]]:
        """The patch as each recorded resolution has it: upstream's text there becomes the user's."""
        out = []
        for r in patch.resolutions:
            p = replace(patch.params, before=r.before, after=r.after, indent=r.indent)
            if r.above:  # the patch's own anchors led nowhere there: the place's own
                p = replace(p, above=r.above, below=r.below, blocks=r.blocks)
            out.append(
                (
                    replace(patch, params=p, resolutions=()),
                    f" (the resolution recorded on {r.recorded_on or 'another tree'}, key {r.context[:12]})",
                )
            )
        return out

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        own = self._check(text, patch, ctx)
        if own.presence is not Presence.PRESENT:
            for variant, how in self._resolved(patch):
                found = self._check(text, variant, ctx)
                if found.presence is Presence.PRESENT:
                    return replace(found, reason=found.reason + how)
        return own

    def apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        own = self._apply(text, patch, ctx)
        if own.status is EditStatus.CONFLICT:  # the same conflict resolved before: replay it (git rerere)
            for variant, how in self._resolved(patch):
                edit = self._apply(text, variant, ctx)
                if edit.status in (EditStatus.CHANGED, EditStatus.UNCHANGED):
                    return replace(edit, reason=edit.reason + how)
        return own

    def revert(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        own = self._revert(text, patch, ctx)
        if own.status is EditStatus.NOT_APPLICABLE:
            for variant, how in self._resolved(patch):
                edit = self._revert(text, variant, ctx)
                if edit.status is EditStatus.CHANGED:
                    return replace(edit, reason=edit.reason + how)
        return own

    def _check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        p: Params = patch.params
        if text is None:
            return Check(Presence.MISSING, f"{ctx.path} does not exist")
        found = locate(p, text, ctx.path)
        s = found.where
        if s is not None and s.match.startswith("after"):
            how = "" if s.match == "after" else " (same code; spacing or comments differ)"
            return Check(
                Presence.PRESENT,
                f"{reasons.where(p)}: present at lines {spans([s])}{how}",
                frozenset(range(s.first, s.last + 1)),
            )
        if len(found.fits) > 1:  # present or not cannot be told: never a confident answer
            return Check(Presence.MISSING, reasons.ambiguous(p, found))
        added = imports.adds(p) if s is None else None  # the place its anchors lead to decides, where there is one
        if added is not None and not imports.missing(found.file.tree, added):
            return Check(Presence.PRESENT, f"{reasons.where(p)}: every name it imports is imported by the module")
        tagged = found.tagged_other(patch.tag)
        if tagged:
            s = tagged[0]
            return Check(
                Presence.MODIFIED,
                f"{reasons.where(p)}: the tagged text at lines {spans([s])} differs from the patch",
                frozenset(range(s.first, s.last + 1)),
                reasons.diff(p.after, s, p, ctx.path),
            )
        if not found.exists:
            return Check(Presence.MISSING, f"no {p.scope or 'module'} scope in {ctx.path}")
        return Check(Presence.MISSING, f"{reasons.where(p)}: not present")

    def _apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} does not exist")
        found = locate(p, text, ctx.path)
        if len(found.fits) > 1:
            return Edit(EditStatus.AMBIGUOUS, reasons.ambiguous(p, found))
        site = found.where
        if site is None:
            return self._set_add(found) or reasons.no_fit(found)
        if site.match.startswith("after"):
            return Edit(EditStatus.UNCHANGED, f"{reasons.where(p)}: already there")
        after = gaptext.reindent(p.after, p.indent, site.indent)
        if after is None:
            return Edit(
                EditStatus.CONFLICT,
                f"{reasons.where(p)}: the scope moved to another indentation and the patch's text cannot follow it",
            )
        if site.match == "before-code":  # upstream's spelling of the lines the fork did not change stays
            before = gaptext.reindent(p.before, p.indent, site.indent)
            after = (
                splice.fine(before, after, site.text) if before is not None and p.mode == "statements" else None
            ) or after
        lines = split_lines(text)
        new = "".join([*lines[: site.first - 1], after, *lines[site.last :]])
        try:
            st.parsed(new, ctx.path)  # the one parse of the result: locate() below, and the next patch, read it
        except SourceSyntaxError:  # e.g. a body left empty: better no patch than a broken module
            try:
                ast.parse(new)
            except SyntaxError as exc:  # (parsed again, for the message: only when it fails)
                return Edit(
                    EditStatus.CONFLICT,
                    f"{reasons.where(p)}: the result would not be valid Python (line {exc.lineno}: {exc.msg})",
                )
            raise
        again = locate(p, new, ctx.path)
        later = again.fits
        if len(later) > 1:  # check and revert could not tell the change from the original: do not make it
            return Edit(EditStatus.AMBIGUOUS, reasons.ambiguous(p, again, " after the change"))
        if not later or not later[0].match.startswith("after") or later[0].first != site.first:
            return Edit(
                EditStatus.CONFLICT,
                f"{reasons.where(p)}: after the change its anchors would not lead back to "
                "it, so check and revert could not find it; the patch's after text does not fit between them",
            )
        undo = None if site.match == "before" else {"before": site.text}
        return Edit(EditStatus.CHANGED, f"{reasons.where(p)}: lines {spans([site])} replaced", new, undo=undo)

    @staticmethod
    def _set_add(found: Placement) -> Edit | None:
        """An import-only patch whose anchors lead nowhere: its names added to the module's imports
        (:mod:`~patchctl.patchsets.kinds.imports`); None for any other patch."""
        p = found.edit
        added = imports.adds(p)
        if added is None:
            return None
        done = imports.set_add(found.text, found.file.tree, added)
        if done is None:
            return Edit(EditStatus.UNCHANGED, f"{reasons.where(p)}: every name it imports is imported by the module")
        new, written, line = done
        return Edit(
            EditStatus.CHANGED,
            f"the module's imports: line {line} added (its names set-added; its anchors "
            f"{reasons.where(p).removeprefix('the module')} no longer lead to one place)",
            new,
            undo={"imports_added": written},
        )

    def _revert(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} does not exist")
        written = (ctx.undo or {}).get("imports_added")
        if isinstance(written, str):  # a set-add: the lines it wrote go
            new = imports.remove(text, written)
            if new is None:
                return Edit(EditStatus.NOT_APPLICABLE, f"the module's imports: `{written.strip()}` is not there once")
            return Edit(EditStatus.CHANGED, "the module's imports: the set-added lines removed", new)
        found = locate(p, text, ctx.path)
        if len(found.fits) > 1:
            return Edit(EditStatus.AMBIGUOUS, reasons.ambiguous(p, found))
        site = found.where
        if site is None or not site.match.startswith("after"):
            return Edit(EditStatus.NOT_APPLICABLE, f"{reasons.where(p)}: not present; nothing to revert")
        undo = ctx.undo or {}
        before = undo["before"] if "before" in undo else gaptext.reindent(p.before, p.indent, site.indent)
        if before is None:
            return Edit(EditStatus.CONFLICT, f"{reasons.where(p)}: the original text cannot be re-indented")
        after = gaptext.reindent(p.after, p.indent, site.indent)
        if "before" not in undo and site.match == "after-code" and after is not None and p.mode == "statements":
            before = splice.fine(after, before, site.text) or before  # the tree's spelling elsewhere stays
        lines = split_lines(text)
        new = "".join([*lines[: site.first - 1], before, *lines[site.last :]])
        return Edit(EditStatus.CHANGED, f"{reasons.where(p)}: lines {spans([site])} restored", new)
