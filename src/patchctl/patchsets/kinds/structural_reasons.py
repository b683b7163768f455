"""What the ``structural`` kind says about a patch's place: where it is, which places fit, why none does.

:mod:`~patchctl.patchsets.kinds.structural` decides; these word its answers. They name a place
by its scope, blocks and nearest anchor (never by a line number alone, which moves with every
release), list every fitting place where there are several, and for a conflict name the one
anchor or statement that differs (:mod:`~patchctl.patchsets.placement.explain`) with a diff beside.
"""

from __future__ import annotations

import difflib

from patchctl.patchsets.kinds.base import Edit, EditStatus
from patchctl.patchsets.placement import gaptext
from patchctl.patchsets.placement.places import Params, Site
from patchctl.patchsets.placement.where import Placement


def where(p: Params) -> str:
    """The patch's place in words: its scope, blocks and nearest anchor (or the header)."""
    scope = (p.scope or "the module") + "".join(f" > `{b}`" for b in p.blocks)
    if p.mode == "header":
        return f"the header of {scope}"
    near = f" after `{p.above[-1]}`" if p.above else (f" before `{p.below[0]}`" if p.below else "")
    return f"{scope}{near}"


def ambiguous(p: Params, found: Placement, when: str = "") -> str:
    """Why nothing is guessed: every fitting place, with which side of the patch it holds."""
    return (
        f"{where(p)}{when} {found.why}; its anchors repeat, so "
        "nothing is guessed: add params.occurrence or more anchors"
    )


def diff(expected: str, site: Site, p: Params, path: str) -> str:
    """A unified diff from the patch's text (at the place's indentation) to the place's."""
    want = gaptext.reindent(expected, p.indent, site.indent) or expected
    return "".join(
        difflib.unified_diff(
            want.splitlines(keepends=True), site.text.splitlines(keepends=True), "patch", f"{path}:{site.first}"
        )
    )


def no_fit(found: Placement) -> Edit:
    """Why no place holds the patch's original text: the scope or an anchor missing, or the first
    statement whose code differs (by syntax: never a quote or a number's spelling)."""
    p = found.edit
    if not found.exists:
        return Edit(EditStatus.NOT_APPLICABLE, found.why)
    if not found.near:
        return Edit(EditStatus.CONFLICT, f"{where(p)}: {found.why}")
    return Edit(EditStatus.CONFLICT, f"{where(p)}: {found.why}", detail=diff(p.before, found.near[0], p, found.path))
