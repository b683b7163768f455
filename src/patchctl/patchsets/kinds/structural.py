"""structural: replace a run of Python statements, found by scope and neighbours, never by line.

The general kind ``patchctl capture`` writes for tagged edits that fit no narrower kind (a new
helper function, a changed default argument, an extra import, an edited line in a method). A
patch names:

- ``scope``: the qualified name of the enclosing class or function (``""`` for the module);
- ``mode = "statements"``: ``above``/``below`` are the first lines of the untouched statements
  around the change (empty: the change starts/ends the scope's body); ``before`` is the exact
  text between them in the original, ``after`` the exact text the fork has there;
- ``mode = "header"``: the change is in the header of the definition ``scope`` names (its
  decorators through the colon); ``before``/``after`` are that header's text.

``indent`` is the indentation the texts were captured at; where the scope now sits at another
depth the texts are re-indented. The original text is kept in the manifest, so revert needs
nothing else; where the tree's text differed from it only in spacing or comments, the record
keeps what was really there. See :mod:`patchctl.patchsets.kinds.structure` for the terms.
"""

from __future__ import annotations

import ast
import difflib
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from patchctl.errors import ManifestError
from patchctl.patchsets.kinds import structure as st
from patchctl.patchsets.kinds.base import Check, Context, Edit, EditStatus
from patchctl.patchsets.kinds.pyparse import parse_ast, split_lines
from patchctl.patchsets.model import Patch, Presence
from patchctl.schema import Field, Schema

MODES = ("statements", "header")


@dataclass(frozen=True)
class Params:
    mode: str
    scope: str
    above: tuple[str, ...]
    below: tuple[str, ...]
    indent: str
    before: str
    after: str
    #: 1-based pick among several places that fit the anchors (set only when a user chose one)
    occurrence: int | None = None


@dataclass(frozen=True)
class _Site:
    first: int
    last: int
    indent: str
    #: the tree's text there
    text: str
    #: after | before | after-code | before-code | other
    match: str


def _header_code(text: str) -> str:
    """A header made parseable: dedented, with an empty body."""
    return textwrap.dedent(text).rstrip() + "\n    pass\n"


def _classify(found: str, indent: str, p: Params) -> str:
    after = st.reindent(p.after, p.indent, indent)
    before = st.reindent(p.before, p.indent, indent)
    if found == after:
        return "after"
    if found == before:
        return "before"
    norm = _header_code if p.mode == "header" else (lambda t: t)
    changes_code = not st.same_code(norm(p.after), norm(p.before))
    if changes_code and st.same_code(norm(found), norm(p.after)):
        return "after-code"
    if changes_code and st.same_code(norm(found), norm(p.before)):
        return "before-code"
    return "other"


def _best(sites: list[_Site], side: str) -> list[_Site]:
    """The sites holding ``side``'s text exactly, else those holding the same code."""
    return [s for s in sites if s.match == side] or [s for s in sites if s.match == f"{side}-code"]


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
        "after": Field(str, True, "the text the change puts there"),
        "occurrence": Field(int, False, "which of several fitting places, counted from 1"),
    }

    def parse_params(self, raw: dict[str, Any], patchset_root: Path, manifest: Path, patch_id: str) -> Params:
        p = Params(raw.get("mode", "statements"), raw.get("scope", ""), tuple(raw.get("above", ())),
                   tuple(raw.get("below", ())), raw.get("indent", ""), raw.get("before", ""), raw["after"],
                   raw.get("occurrence"))
        if p.mode == "header" and not p.scope:
            raise ManifestError(manifest, "params.scope", "is empty, but a header belongs to a class or function",
                                'name the definition, e.g. scope = "compute_score"', patch_id)
        if p.before == p.after:
            raise ManifestError(manifest, "params.after", "equals params.before", "the patch must change something", patch_id)
        if p.occurrence is not None and p.occurrence < 1:
            raise ManifestError(manifest, "params.occurrence", "must be 1 or more", "count fitting places from 1", patch_id)
        return p

    # -- locating --------------------------------------------------------------------------

    def _sites(self, text: str, p: Params, path: str) -> tuple[list[_Site], bool]:
        """The places that fit the patch, and whether its scope exists at all."""
        tree = parse_ast(text, path)
        lines = split_lines(text)
        if p.mode == "header":
            nodes = [n for n in st.find_scopes(tree, p.scope) if not isinstance(n, ast.Module)]
            # decorators belong to the header only when the patch changes them
            decorated = any(t.lstrip().startswith("@") for t in (p.before, p.after))
            spans = [(st.header_span(lines, n)[0] if decorated else n.lineno, st.header_end(lines, n),  # type: ignore[attr-defined]
                      lines[n.lineno - 1]) for n in nodes]  # type: ignore[attr-defined]
            found = [(a, b, line[: len(line) - len(line.lstrip())]) for a, b, line in spans]
            exists = bool(nodes)
        else:
            windows = st.candidates(lines, tree, p.scope, list(p.above), list(p.below))
            found = [(w.first, w.last, w.indent) for w in windows]
            exists = bool(st.find_scopes(tree, p.scope))
        if p.occurrence is not None:
            found = found[p.occurrence - 1: p.occurrence]
        sites = []
        for first, last, indent in found:
            body = "".join(lines[first - 1: last])
            sites.append(_Site(first, last, indent, body, _classify(body, indent, p)))
        return sites, exists

    @staticmethod
    def _where(p: Params) -> str:
        scope = p.scope or "the module"
        if p.mode == "header":
            return f"the header of {scope}"
        near = f" after `{p.above[-1]}`" if p.above else (f" before `{p.below[0]}`" if p.below else "")
        return f"{scope}{near}"

    @staticmethod
    def _lines(sites: list[_Site]) -> str:
        return ", ".join(f"{s.first}-{s.last}" if s.last > s.first else str(s.first) for s in sites)

    # -- the three operations ----------------------------------------------------------------

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        p: Params = patch.params
        if text is None:
            return Check(Presence.MISSING, f"{ctx.path} does not exist")
        sites, exists = self._sites(text, p, ctx.path)
        present = _best(sites, "after")
        if present:
            s = present[0]
            how = "" if s.match == "after" else " (same code; spacing or comments differ)"
            return Check(Presence.PRESENT, f"{self._where(p)}: present at lines {self._lines([s])}{how}",
                         frozenset(range(s.first, s.last + 1)))
        tagged = [s for s in sites if s.match == "other" and f"# {patch.tag}" in s.text]
        if tagged:
            s = tagged[0]
            return Check(Presence.MODIFIED, f"{self._where(p)}: the tagged text at lines {self._lines([s])} differs "
                         "from the patch", frozenset(range(s.first, s.last + 1)), self._diff(p.after, s, p, ctx.path))
        if not exists:
            return Check(Presence.MISSING, f"no {p.scope or 'module'} scope in {ctx.path}")
        return Check(Presence.MISSING, f"{self._where(p)}: not present")

    @staticmethod
    def _diff(expected: str, site: _Site, p: Params, path: str) -> str:
        want = st.reindent(expected, p.indent, site.indent) or expected
        return "".join(difflib.unified_diff(want.splitlines(keepends=True), site.text.splitlines(keepends=True),
                                            "patch", f"{path}:{site.first}"))

    def apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} does not exist")
        sites, exists = self._sites(text, p, ctx.path)
        if any(s.match in ("after", "after-code") for s in sites):
            return Edit(EditStatus.UNCHANGED, f"{self._where(p)}: already there")
        fits = _best(sites, "before")
        if len(fits) > 1:
            return Edit(EditStatus.AMBIGUOUS, f"{self._where(p)} fits at lines {self._lines(fits)}; "
                        "add params.occurrence or more anchors")
        if not fits:
            if not exists:
                return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} has no {p.scope or 'module'} scope")
            if not sites:
                return Edit(EditStatus.CONFLICT, f"{self._where(p)}: the statements around the change "
                            f"(above {list(p.above)}, below {list(p.below)}) are not in {p.scope or 'the module'}")
            return Edit(EditStatus.CONFLICT, f"{self._where(p)}: lines {self._lines(sites)} hold other code than the "
                        "patch expects", detail=self._diff(p.before, sites[0], p, ctx.path))
        site = fits[0]
        after = st.reindent(p.after, p.indent, site.indent)
        if after is None:
            return Edit(EditStatus.CONFLICT, f"{self._where(p)}: the scope moved to another indentation and the "
                        "patch's text cannot follow it")
        lines = split_lines(text)
        new = "".join([*lines[: site.first - 1], after, *lines[site.last:]])
        try:
            ast.parse(new)
        except SyntaxError as exc:  # e.g. a body left empty: better no patch than a broken module
            return Edit(EditStatus.CONFLICT, f"{self._where(p)}: the result would not be valid Python "
                        f"(line {exc.lineno}: {exc.msg})")
        undo = None if site.match == "before" else {"before": site.text}
        return Edit(EditStatus.CHANGED, f"{self._where(p)}: lines {self._lines([site])} replaced", new, undo=undo)

    def revert(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} does not exist")
        sites, _ = self._sites(text, p, ctx.path)
        present = _best(sites, "after")
        if not present:
            return Edit(EditStatus.NOT_APPLICABLE, f"{self._where(p)}: not present; nothing to revert")
        if len(present) > 1:
            return Edit(EditStatus.AMBIGUOUS, f"{self._where(p)}: present at lines {self._lines(present)}")
        site = present[0]
        undo = ctx.undo or {}
        before = undo["before"] if "before" in undo else st.reindent(p.before, p.indent, site.indent)
        if before is None:
            return Edit(EditStatus.CONFLICT, f"{self._where(p)}: the original text cannot be re-indented")
        lines = split_lines(text)
        new = "".join([*lines[: site.first - 1], before, *lines[site.last:]])
        return Edit(EditStatus.CHANGED, f"{self._where(p)}: lines {self._lines([site])} restored", new)
