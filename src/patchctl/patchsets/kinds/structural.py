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
:mod:`patchctl.patchsets.kinds.syntax`) and the text between is ``before`` or ``after``
(exactly, else as the same code). Where it holds the same code in other spelling, only the
statements the fork changed are written (:mod:`patchctl.patchsets.kinds.splice`). Every run of statements reading like
``below`` counts as an end, not only the nearest: the text replaced may itself hold one.
Where several places fit — the original at one and the change at another included — check,
apply and revert answer ambiguous rather than pick one, and apply refuses a change after which
its place could not be told apart again (issue 10: never confidently wrong).

``indent`` is the indentation the texts were captured at; where the scope now sits at another
depth the texts are re-indented. The original text is kept in the manifest, so revert needs
nothing else; where the tree's text differed from it only in spacing or comments, the record
keeps what was really there. See :mod:`patchctl.patchsets.kinds.anchors` for the terms, and
:mod:`patchctl.patchsets.kinds.places` for how the fitting places are found and ranked.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from patchctl.errors import ManifestError
from patchctl.patchsets.kinds import anchors as st
from patchctl.patchsets.kinds import explain, places, splice
from patchctl.patchsets.kinds.base import Check, Context, Edit, EditStatus
from patchctl.patchsets.kinds.places import Params
from patchctl.patchsets.kinds.pyparse import parse_ast, split_lines
from patchctl.patchsets.model import Patch, Presence
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

    @staticmethod
    def _where(p: Params) -> str:
        scope = (p.scope or "the module") + "".join(f" > `{b}`" for b in p.blocks)
        if p.mode == "header":
            return f"the header of {scope}"
        near = f" after `{p.above[-1]}`" if p.above else (f" before `{p.below[0]}`" if p.below else "")
        return f"{scope}{near}"

    @staticmethod
    def _lines(sites: list[places.Site]) -> str:
        return ", ".join(f"{s.first}-{s.last}" if s.last > s.first else str(s.first) for s in sites)

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

    @staticmethod
    def _places(sites: list[places.Site]) -> str:
        """Lines of each place, with which side of the patch it holds."""
        return ", ".join(
            f"{Structural._lines([s])} ({'patched' if s.match.startswith('after') else 'unpatched'})" for s in sites
        )

    def _ambiguous(self, p: Params, fits: list[places.Site], when: str = "") -> str:
        return (
            f"{self._where(p)}{when} fits {len(fits)} places, lines {self._places(fits)}; its anchors repeat, so "
            "nothing is guessed: add params.occurrence or more anchors"
        )

    def _check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        p: Params = patch.params
        if text is None:
            return Check(Presence.MISSING, f"{ctx.path} does not exist")
        found = places.find(text, p, ctx.path)
        s = found.one
        if s is not None and s.match.startswith("after"):
            how = "" if s.match == "after" else " (same code; spacing or comments differ)"
            return Check(
                Presence.PRESENT,
                f"{self._where(p)}: present at lines {self._lines([s])}{how}",
                frozenset(range(s.first, s.last + 1)),
            )
        if len(found.fits) > 1:  # present or not cannot be told: never a confident answer
            return Check(Presence.MISSING, self._ambiguous(p, found.fits))
        tagged = found.tagged_other(patch.tag)
        if tagged:
            s = tagged[0]
            return Check(
                Presence.MODIFIED,
                f"{self._where(p)}: the tagged text at lines {self._lines([s])} differs from the patch",
                frozenset(range(s.first, s.last + 1)),
                self._diff(p.after, s, p, ctx.path),
            )
        if not found.exists:
            return Check(Presence.MISSING, f"no {p.scope or 'module'} scope in {ctx.path}")
        return Check(Presence.MISSING, f"{self._where(p)}: not present")

    @staticmethod
    def _diff(expected: str, site: places.Site, p: Params, path: str) -> str:
        want = st.reindent(expected, p.indent, site.indent) or expected
        return "".join(
            difflib.unified_diff(
                want.splitlines(keepends=True), site.text.splitlines(keepends=True), "patch", f"{path}:{site.first}"
            )
        )

    def _apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} does not exist")
        found = places.find(text, p, ctx.path)
        if len(found.fits) > 1:
            return Edit(EditStatus.AMBIGUOUS, self._ambiguous(p, found.fits))
        site = found.one
        if site is None:
            return self._no_fit(text, found, p, ctx.path)
        if site.match.startswith("after"):
            return Edit(EditStatus.UNCHANGED, f"{self._where(p)}: already there")
        after = st.reindent(p.after, p.indent, site.indent)
        if after is None:
            return Edit(
                EditStatus.CONFLICT,
                f"{self._where(p)}: the scope moved to another indentation and the patch's text cannot follow it",
            )
        if site.match == "before-code":  # upstream's spelling of the lines the fork did not change stays
            before = st.reindent(p.before, p.indent, site.indent)
            after = (
                splice.fine(before, after, site.text) if before is not None and p.mode == "statements" else None
            ) or after
        lines = split_lines(text)
        new = "".join([*lines[: site.first - 1], after, *lines[site.last :]])
        try:
            ast.parse(new)
        except SyntaxError as exc:  # e.g. a body left empty: better no patch than a broken module
            return Edit(
                EditStatus.CONFLICT,
                f"{self._where(p)}: the result would not be valid Python (line {exc.lineno}: {exc.msg})",
            )
        later = places.find(new, p, ctx.path).fits
        if len(later) > 1:  # check and revert could not tell the change from the original: do not make it
            return Edit(EditStatus.AMBIGUOUS, self._ambiguous(p, later, " after the change"))
        if not later or not later[0].match.startswith("after") or later[0].first != site.first:
            return Edit(
                EditStatus.CONFLICT,
                f"{self._where(p)}: after the change its anchors would not lead back to "
                "it, so check and revert could not find it; the patch's after text does not fit between them",
            )
        undo = None if site.match == "before" else {"before": site.text}
        return Edit(EditStatus.CHANGED, f"{self._where(p)}: lines {self._lines([site])} replaced", new, undo=undo)

    def _no_fit(self, text: str, found: places.Found, p: Params, path: str) -> Edit:
        """Why no place holds the patch's original text: the anchor missing, or the first
        statement whose code differs (by syntax: never a quote or a number's spelling)."""
        if not found.exists:
            return Edit(EditStatus.NOT_APPLICABLE, f"{path} has no {p.scope or 'module'} scope")
        if not found.near:
            why = explain.anchors(
                split_lines(text), parse_ast(text, path), p.scope, list(p.above), list(p.below), list(p.blocks)
            )
            return Edit(EditStatus.CONFLICT, f"{self._where(p)}: {why}")
        near = found.near[0]
        before = st.reindent(p.before, p.indent, near.indent) or p.before
        why = explain.difference(before, near.text, near.first) if p.mode == "statements" else "its header differs"
        return Edit(
            EditStatus.CONFLICT,
            f"{self._where(p)}: lines {self._lines(found.near)} hold other code than the patch expects: {why}",
            detail=self._diff(p.before, near, p, path),
        )

    def _revert(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} does not exist")
        found = places.find(text, p, ctx.path)
        if len(found.fits) > 1:
            return Edit(EditStatus.AMBIGUOUS, self._ambiguous(p, found.fits))
        site = found.one
        if site is None or not site.match.startswith("after"):
            return Edit(EditStatus.NOT_APPLICABLE, f"{self._where(p)}: not present; nothing to revert")
        undo = ctx.undo or {}
        before = undo["before"] if "before" in undo else st.reindent(p.before, p.indent, site.indent)
        if before is None:
            return Edit(EditStatus.CONFLICT, f"{self._where(p)}: the original text cannot be re-indented")
        after = st.reindent(p.after, p.indent, site.indent)
        if "before" not in undo and site.match == "after-code" and after is not None and p.mode == "statements":
            before = splice.fine(after, before, site.text) or before  # the tree's spelling elsewhere stays
        lines = split_lines(text)
        new = "".join([*lines[: site.first - 1], before, *lines[site.last :]])
        return Edit(EditStatus.CHANGED, f"{self._where(p)}: lines {self._lines([site])} restored", new)
