"""The best candidate place of a conflicting patch of any kind, for ``apply --conflicts=markers``.

A place is a run of upstream's lines and the two texts the patch has for it: the original the
fork changed (``ours``, the 3-way view's middle) and the change (``theirs``). How each kind finds it:

- ``structural``: :mod:`~patchctl.patchsets.kinds.candidate` (its anchors, else the statement
  most like them);
- ``config-key``, ``requirement``, ``text-hunk`` (the :class:`~.swap.Swap` kinds): the key, the
  package line or the hunk where the kind finds it now; a key whose parent upstream removed goes
  at the end of its nearest ancestor that is left, a hunk nothing matches exactly at the window
  of the file most like it;
- the whole-file kinds (``add-file`` over another file, ``rename-file`` onto an existing path,
  ``delete-file`` of a file upstream changed): markers over the whole file. A user resolves them
  in the one file an editor already has open, and ``refresh`` reads the result back the same way
  as any other conflict; ``FILE.patchctl-ours``/``-theirs`` beside it would be two more files to
  compare by hand and to clean up, and a resolution not in the file apply writes.

No place is offered (the reason goes into the conflict's line instead) for a binary file, where
markers would corrupt the bytes, and for the kinds that rewrite code by syntax rather than
ship text (``keyword-rename``, ``keyword-value``, ``guard-import``, ``linerewrite``, ``prelude``,
``shell-env``): they hold no text of the lines they change, so there is no original to show
beside upstream's, and their conflict already names the one line and value that differ.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from patchctl.patchsets.kinds import KINDS, candidate
from patchctl.patchsets.kinds import anchors as st
from patchctl.patchsets.kinds.pyparse import split_lines
from patchctl.patchsets.model import Patch

#: the kinds whose patches are written over the whole file
WHOLE = ("add-file", "rename-file", "delete-file")
#: why each kind with no place has none
NO_PLACE = {
    "blob": "a binary file: markers would corrupt it; copy the patchset's file over it by hand, or leave it out",
    **{
        k: f"{k} rewrites code by syntax and keeps no text of the lines it changes, so there is no "
        "original to show beside upstream's; edit the line the reason names by hand"
        for k in ("keyword-rename", "keyword-value", "guard-import", "linerewrite", "prelude", "shell-env")
    },
}


@dataclass(frozen=True)
class Place:
    """Lines ``first``..``last`` of upstream's file (1-based; ``last == first - 1``: an empty place
    before line ``first``), with the patch's original and change laid out there."""

    first: int
    last: int
    ours: str
    theirs: str
    #: how it was found, for the row's reason
    how: str
    indent: str = ""
    #: the whole file is the place: a resolution replaces the whole file (empty: deletes it)
    whole: bool = False
    #: structural: the place's own anchors where the patch's led nowhere
    above: tuple[str, ...] = ()
    below: tuple[str, ...] = ()
    blocks: tuple[str, ...] = ()


def _binary(text: str) -> bool:
    """Bytes read with surrogate escapes (not UTF-8) or a NUL: no text to put markers in."""
    return "\x00" in text or any("\udc80" <= c <= "\udcff" for c in text)


def _ended(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def propose(text: str | None, patch: Patch, path: str, read: Callable[[str], str | None]) -> Place | str:
    """``patch``'s place in ``text`` (the file at ``path``), or why it has none. ``read`` reads
    another file of the tree (rename-file's source)."""
    if patch.kind in NO_PLACE:
        return NO_PLACE[patch.kind]
    if text is None:
        return f"{path} does not exist, so there is nothing to put markers in"
    if _binary(text):
        return NO_PLACE["blob"]
    if patch.kind == "structural":
        return _structural(text, patch, path)
    if patch.kind in WHOLE:
        return _whole(text, patch, read)
    found = KINDS[patch.kind].place(split_lines(text), patch.params, path)  # type: ignore[attr-defined]
    if isinstance(found, str):
        return found
    start, end, ours, theirs, how = found
    return Place(start + 1, end, _ended(ours), _ended(theirs), how)


def _structural(text: str, patch: Patch, path: str) -> Place | str:
    p = patch.params
    c = candidate.propose(text, p, path)
    if c is None:
        return (
            f"no statement of {p.scope or 'the module'} reads at least {candidate.MIN_RATIO:.0%} like its anchors, "
            "and markers at a guess would be worse than none"
        )
    ours = st.reindent(p.before, p.indent, c.indent) or p.before
    theirs = st.reindent(p.after, p.indent, c.indent) or p.after
    return Place(c.first, c.last, ours, theirs, c.how, c.indent, False, c.above, c.below, c.blocks)


def _whole(text: str, patch: Patch, read: Callable[[str], str | None]) -> Place | str:
    p = patch.params
    if patch.kind == "add-file":
        theirs, how = p.content, "the whole file (upstream's, then the patchset's: the fork added it)"
    elif patch.kind == "delete-file":
        theirs, how = (
            "",
            "the whole file (upstream's, then nothing: the fork deleted it; empty or delete it to delete it)",
        )
    else:  # rename-file onto a path upstream has a file at
        moved = read(p.source)
        if moved is None or _binary(moved):
            return f"{p.source} is gone or binary, so there is no moved text to show"
        theirs = moved
        how = f"the whole file (upstream's, then {p.source}, which the fork moved here; it stays where it is)"
    if _binary(theirs):
        return NO_PLACE["blob"]
    return Place(1, len(split_lines(text)), "", _ended(theirs), how, whole=True)
