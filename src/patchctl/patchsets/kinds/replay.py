"""Recorded resolutions replayed for every kind but ``structural`` (which replays its own at its
anchors), as ``git rerere`` does: keyed by upstream's text at the conflict's place.

A resolution says: where upstream has ``before``, the user wants ``after``. It is found where the
kind's own candidate place (:mod:`~patchctl.patchsets.kinds.marking`) holds that text, else where
the text occurs exactly once in the file; a whole-file resolution only where the file is exactly
that text. So check, apply and revert agree: the resolved text in place is *present*, upstream's
text there is what apply replaces, and revert puts upstream's text back. Nothing else of the file
is touched, and a text found twice outside the kind's place is never guessed at.

A "keep upstream" record (``keep = true``, kept apart in ``Patch.kept``) is no text to write: it
drops the patch, through :func:`dropped`, which :func:`~patchctl.patchsets.reader.assess` asks
for apply and verify alike, and revert of a tree with no record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from patchctl.patchsets.kinds.base import Check, Context, Edit, EditStatus, PatchKind
from patchctl.patchsets.model import Patch, Presence, Resolution
from patchctl.patchsets.placement.pyparse import split_lines
from patchctl.records import replace

if TYPE_CHECKING:
    from packaging.version import Version


def _how(r: Resolution) -> str:
    return f" (the resolution recorded on {r.recorded_on or 'another tree'}, key {r.context[:12]})"


def find(text: str | None, piece: str, r: Resolution, patch: Patch, ctx: Context) -> tuple[int, int] | None:
    """Where ``piece`` (a resolution's ``before`` or ``after``) stands in ``text``: lines
    (0-based, end excluded), (0, 0) for a whole file that is gone; None when nowhere or twice."""
    from patchctl.patchsets.kinds import marking  # marking reads the registry this module is part of

    if r.whole:
        if text is None:
            return (0, 0) if piece == "" else None
        return (0, len(split_lines(text))) if text == piece else None
    if text is None:
        return None
    lines = split_lines(text)
    place = marking.propose(text, patch, ctx.path, ctx.read or (lambda _rel: None))
    if isinstance(place, marking.Place) and not place.whole and "".join(lines[place.first - 1 : place.last]) == piece:
        return place.first - 1, place.last
    want = split_lines(piece)
    if not want:
        return None
    n = len(want)
    hits = [i for i in range(len(lines) - n + 1) if lines[i] == want[0] and lines[i : i + n] == want]
    return (hits[0], hits[0] + n) if len(hits) == 1 else None


def _version(v: str | None) -> Version | None:
    from packaging.version import InvalidVersion, Version  # here: only a patch with a kept entry asks

    try:
        return Version(v) if v else None
    except InvalidVersion:
        return None


def dropped(text: str | None, patch: Patch, ctx: Context, version: str | None) -> str | None:
    """Why ``patch`` is dropped on this tree by a "keep upstream" record, else None.

    The user said: from the version where the conflict came up on, upstream's text stands. So
    on a tree declaring that version or a later one the patch is dropped, wherever its text
    stands. Where either version is unknown (a checkout with no version file, a keep recorded on
    one), only the same conflict drops it: upstream's kept text back at the patch's place.
    """
    if not patch.kept:
        return None
    here = _version(version)
    for r in patch.kept:
        since = _version(r.since)
        how = f"upstream's text kept by refresh on {r.recorded_on or 'another tree'} (key {r.context[:12]})"
        if here is not None and since is not None:
            if here >= since:
                return f"{ctx.path}: dropped from verl {since} on, {how}"
        elif find(text, r.before, r, patch, ctx) is not None:
            return f"{ctx.path}: dropped where upstream's text is the one kept, {how}"
    return None


def _swap(text: str | None, span: tuple[int, int], piece: str, whole: bool) -> str | None:
    if whole:
        return piece or None
    lines = split_lines(text or "")
    return "".join([*lines[: span[0]], piece, *lines[span[1] :]])


class Replay:
    """``kind`` with each patch's recorded resolutions tried where its own texts do not fit."""

    def __init__(self, kind: PatchKind) -> None:
        self._kind = kind

    def __getattr__(self, name: str) -> Any:  # name, description, params_schema, parse_params, place, ...
        return getattr(self._kind, name)

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        own = self._kind.check(text, patch, ctx)
        if own.presence is Presence.PRESENT:
            return own
        for r in patch.resolutions:
            span = find(text, r.after, r, patch, ctx)
            if span is not None:
                owned = frozenset(range(span[0] + 1, span[1] + 1))
                return Check(Presence.PRESENT, f"{ctx.path}: as the conflict was resolved{_how(r)}", owned)
        if own.presence is Presence.MODIFIED and any(find(text, r.before, r, patch, ctx) for r in patch.resolutions):
            return replace(own, presence=Presence.MISSING, reason=f"{own.reason}; a recorded resolution fits here")
        return own

    def apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        own = self._kind.apply(text, patch, ctx)
        if own.status is not EditStatus.CONFLICT:
            return own
        for r in patch.resolutions:
            span = find(text, r.before, r, patch, ctx)
            if span is not None:
                new = _swap(text, span, r.after, r.whole)
                return Edit(
                    EditStatus.CHANGED,
                    f"{ctx.path}: the conflict resolved as before{_how(r)}",
                    new,
                    undo={"resolution": r.context},
                )
        return own

    def revert(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        """A patch applied through a resolution (its record names it) is reverted through it
        first: the kind's own revert could find its own text inside the resolved one and take
        only that part back."""
        key = (ctx.undo or {}).get("resolution")
        if key is None:
            own = self._kind.revert(text, patch, ctx)
            if own.status is EditStatus.CHANGED or not patch.resolutions:
                return own
        tried = [r for r in patch.resolutions if key in (None, r.context)]
        found = [(r, span) for r in tried if (span := find(text, r.after, r, patch, ctx)) is not None]
        if len(found) == 1:
            r, span = found[0]
            new = _swap(text, span, r.before, r.whole)
            return Edit(EditStatus.CHANGED, f"{ctx.path}: upstream's text restored{_how(r)}", new)
        return own if key is None else self._kind.revert(text, patch, ctx)
