"""The best candidate place of a conflicting patch of any kind, for ``apply --conflicts=markers``.

A place is a run of upstream's lines and the two texts the patch has for it: the original the
fork changed (``ours``, the 3-way view's middle) and the change (``theirs``). How each kind finds it:

- ``structural``: :func:`~patchctl.patchsets.placement.locate`'s candidate (its anchors, else the
  statement most like them);
- ``config-key``, ``requirement``, ``text-hunk`` (the :class:`~.swap.Swap` kinds): the key, the
  package line or the hunk where the kind finds it now; a key whose parent upstream removed goes
  at the end of its nearest ancestor that is left, a hunk nothing matches exactly at the window
  of the file most like it;
- the whole-file kinds (``add-file`` over another file, ``rename-file`` onto an existing path,
  ``delete-file`` of a file upstream changed): markers over the whole file. A user resolves them
  in the one file an editor already has open, and ``refresh`` reads the result back the same way
  as any other conflict; ``FILE.patchctl-ours``/``-theirs`` beside it would be two more files to
  compare by hand and to clean up, and a resolution not in the file apply writes.

- ``keyword-rename`` whose old keyword upstream passes another value: the call, with upstream's
  value as the original (the value put back to what the patch expects) and the kind's own edit of
  that original as the change; ``shell-env`` exporting other values: the export lines, with the
  patch's lines as the change (the patch keeps no original).

No place is offered (the reason goes into the conflict's line instead) for a binary file, where
markers would corrupt the bytes, and for ``keyword-value``, ``guard-import``, ``linerewrite`` and
``prelude``: their conflicts are of layout (a keyword spread over lines, a line shared with other
code, tagged lines edited since), which the message names and markers would not resolve.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from patchctl.patchsets.kinds import KINDS, calls
from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.kinds.shell_env import ShellEnv
from patchctl.patchsets.model import Patch
from patchctl.patchsets.placement import gaptext
from patchctl.patchsets.placement.pyparse import parse_ast, split_lines

#: the kinds whose patches are written over the whole file
WHOLE = ("add-file", "rename-file", "delete-file")
#: why each kind with no place has none
NO_PLACE = {
    "blob": "a binary file: markers would corrupt it; copy the patchset's file over it by hand, or leave it out",
    **{
        k: f"{k} conflicts on the layout of the code it rewrites, not on a text of its own; "
        "change the line the reason names by hand"
        for k in ("keyword-value", "guard-import", "linerewrite", "prelude")
    },
}


class Placed(Protocol):
    """A kind that says where its piece is for markers (:meth:`~.swap.Swap.place`)."""

    def place(self, lines: list[str], p: Any, path: str) -> tuple[int, int, str, str, str] | str: ...


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


def ended(text: str) -> str:
    """``text`` ending in a line break, so that the marker line after it starts a line."""
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
    if patch.kind == "keyword-rename":
        return _keyword_rename(text, patch, path)
    if patch.kind == "shell-env":
        return _shell_env(text, patch)
    found = cast(Placed, KINDS[patch.kind]).place(split_lines(text), patch.params, path)
    if isinstance(found, str):
        return found
    start, end, ours, theirs, how = found
    return Place(start + 1, end, ended(ours), ended(theirs), how)


def _structural(text: str, patch: Patch, path: str) -> Place | str:
    # imported on first use: a patchset with no structural patch needs none of it
    from patchctl.patchsets.placement import locate

    p = patch.params
    c = locate(p, text, path).candidate
    if isinstance(c, str):
        return c
    ours = gaptext.reindent(p.before, p.indent, c.indent) or p.before
    theirs = gaptext.reindent(p.after, p.indent, c.indent) or p.after
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
    return Place(1, len(split_lines(text)), "", ended(theirs), how, whole=True)


def _three(upstream: str, ours: str, theirs: str, how: str) -> Place:
    """The place where three versions of one file differ: the lines all three share at the top
    and the bottom are left out."""
    u, o, t = split_lines(upstream), split_lines(ours), split_lines(theirs)
    head = 0
    while head < min(len(u), len(o), len(t)) and u[head] == o[head] == t[head]:
        head += 1
    tail = 0
    while tail < min(len(u), len(o), len(t)) - head and u[-1 - tail] == o[-1 - tail] == t[-1 - tail]:
        tail += 1
    return Place(head + 1, len(u) - tail, "".join(o[head : len(o) - tail]), "".join(t[head : len(t) - tail]), how)


def _keyword_rename(text: str, patch: Patch, path: str) -> Place | str:
    p = patch.params
    sites = [s for s in calls.sites(parse_ast(text, path), p.call, p.old_keyword) if s.keyword is not None]
    if len(sites) != 1 or p.old_value is None:
        return f"no one call to {p.call}(...) passing {p.old_keyword}= to mark"
    value = sites[0].keyword.value  # type: ignore[union-attr]  # sites keeps calls passing it
    raw = text.encode("utf-8")
    offsets = [0]
    for line in split_lines(text):
        offsets.append(offsets[-1] + len(line.encode("utf-8")))
    start = offsets[value.lineno - 1] + value.col_offset
    end = offsets[(value.end_lineno or value.lineno) - 1] + (value.end_col_offset or 0)
    ours = (raw[:start] + p.old_value.encode("utf-8") + raw[end:]).decode("utf-8")
    edit = KINDS[patch.kind].apply(ours, patch, Context(Path("."), path))
    if edit.status is not EditStatus.CHANGED or edit.text is None:
        return f"the patch does not apply even with {p.old_keyword}={p.old_value} put back"
    how = f"the call to {p.call}(...) at line {sites[0].line}, with the value the patch expects as its original"
    return _three(text, ours, edit.text, how)


def _shell_env(text: str, patch: Patch) -> Place | str:
    _, other, absent = ShellEnv().scan(text, patch)
    if not other:
        return "no export with another value to mark"
    lines = split_lines(text)
    first, last = min(n for *_, n in other), max(n for *_, n in other)
    mine = {
        n: line
        for n, line in ((n, f"export {name}={dict(patch.params.env)[name]}  # {patch.tag}\n") for name, _, n in other)
    }
    theirs = [mine.get(n, lines[n - 1]) for n in range(first, last + 1)]
    theirs += [f"export {name}={value}  # {patch.tag}\n" for name, value in absent]
    how = f"the exports at lines {first}-{last}, with the patch's values as its change (it keeps no original)"
    return Place(first, last, "", "".join(theirs), how)
