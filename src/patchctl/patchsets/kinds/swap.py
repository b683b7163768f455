"""The shared half of the kinds that swap one located piece of a file (config-key, requirement, text-hunk).

Such a kind only says where its piece is (:meth:`Swap._spot`) and how to lay a piece out there
(:meth:`Swap._lay`). Its params carry the piece as BASE had it (``was``) and as the fork has it
(``now``), either absent (None). Then check, apply and revert follow one rule, so they cannot
disagree: the piece as the fork has it is *present*; as BASE had it, *missing*; anything else is
a change someone else made, named as it stands against both (never a whole-file diff).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from patchctl.errors import ManifestError
from patchctl.patchsets.kinds.base import Check, Context, Edit, EditStatus
from patchctl.patchsets.model import Patch, Presence
from patchctl.patchsets.placement.pyparse import split_lines


@dataclass(frozen=True)
class Spot:
    """Where a kind's piece is in a file, or would go."""

    #: first line (0-based) of the piece, or where it would be inserted
    start: int
    #: one past its last line (== start when absent)
    end: int
    #: the piece's text as it stands; None when absent
    current: str | None
    #: why the piece has no place in this file (its parent key is gone), else None
    problem: str | None = None
    #: extra facts for laying a piece out here (a YAML key's indentation)
    hint: int = 0
    #: context lines of the piece left out at its top and bottom to find it (text-hunk's fuzz)
    trim: tuple[int, int] = (0, 0)


def normal(text: str | None) -> list[str] | None:
    """A piece compared as text with trailing spaces, line endings and blank lines not counted."""
    return None if text is None else [ln.rstrip() for ln in text.splitlines() if ln.strip()]


def show(text: str | None) -> str:
    if text is None:
        return "nothing"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    return repr(first + (f" (+{len(lines) - 1} line(s))" if len(lines) > 1 else ""))


class Swap:
    creates_target: ClassVar[bool] = False
    #: whether revert puts back the exact lines apply replaced (kept in the record)
    exact_undo: ClassVar[bool] = True

    def _spot(self, lines: list[str], p: Any, path: str) -> Spot:
        raise NotImplementedError

    def _lay(self, piece: str, spot: Spot) -> list[str]:
        """The lines ``piece`` becomes at ``spot`` (default: as written)."""
        return split_lines(piece)

    def _widen(self, lines: list[str], spot: Spot, piece: str | None) -> Spot:
        """The lines that ``piece`` replaces at ``spot``, where a kind takes more or fewer than the piece's own."""
        return spot

    def _show(self, text: str | None) -> str:
        return show(text)

    def _next(self, lines: list[str], spot: Spot, p: Any, path: str) -> str | None:
        """The neighbour after the piece (a sibling key, the next package), so that revert puts a
        removed piece back where it was rather than at the end."""
        return None

    def _what(self, p: Any) -> str:
        """The piece as a user names it: ``key trainer.total_epochs``."""
        raise NotImplementedError

    def _same(self, a: str | None, b: str | None) -> bool:
        return normal(a) == normal(b)

    def _one_change(self, raw: dict[str, Any], manifest: Path, patch_id: str, fix: str, again: str) -> None:
        """Refuse params that swap nothing: neither ``was`` nor ``now``, or the two the same as this
        kind compares pieces (``again`` says how), would make check call every file both present and
        missing. ``fix`` is the one-line remedy in the kind's words."""
        if "was" not in raw and "now" not in raw:
            raise ManifestError(manifest, "params.now", "missing (and so is params.was)", fix, patch_id)
        if "was" in raw and "now" in raw and self._same(raw["was"], raw["now"]):
            raise ManifestError(manifest, "params.now", again, fix, patch_id)

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        p = patch.params
        if text is None:
            return Check(Presence.MISSING, f"{ctx.path} does not exist")
        spot = self._spot(split_lines(text), p, ctx.path)
        owned = frozenset(range(spot.start + 1, spot.end + 1))
        if spot.problem:
            return Check(Presence.MISSING, spot.problem)
        if self._same(spot.current, p.now):
            return Check(Presence.PRESENT, f"{ctx.path}: {self._what(p)} is as the patch has it", owned)
        if self._same(spot.current, p.was):
            return Check(Presence.MISSING, f"{ctx.path}: {self._what(p)} is as upstream had it")
        return Check(Presence.MODIFIED, self._differs(p, ctx.path, spot), owned)

    def _differs(self, p: Any, path: str, spot: Spot) -> str:
        return (
            f"{path}:{spot.start + 1}: {self._what(p)} is {self._show(spot.current)} here, where the patch "
            f"has {self._show(p.now)} and the upstream it was captured from had {self._show(p.was)}"
        )

    def apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p = patch.params
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} does not exist")
        lines = split_lines(text)
        spot = self._spot(lines, p, ctx.path)
        if spot.problem:
            return Edit(EditStatus.CONFLICT, spot.problem)
        if self._same(spot.current, p.now):
            return Edit(EditStatus.UNCHANGED, f"{ctx.path}: {self._what(p)} is already as the patch has it")
        if not self._same(spot.current, p.was):
            return Edit(EditStatus.CONFLICT, self._differs(p, ctx.path, spot))
        spot = self._widen(lines, spot, p.now)
        new = self._put(lines, spot, p.now, ctx.path)
        verb = "added" if spot.current is None else "removed" if p.now is None else "set"
        return Edit(
            EditStatus.CHANGED,
            f"{ctx.path}:{spot.start + 1}: {self._what(p)} {verb}",
            new,
            undo={
                "old": "".join(lines[spot.start : spot.end]) if spot.current is not None else None,
                "next": self._next(lines, spot, p, ctx.path),
            },
        )

    def revert(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p = patch.params
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} does not exist")
        lines = split_lines(text)
        if ctx.undo and ctx.undo.get("next") and hasattr(p, "before"):
            p = replace(p, before=ctx.undo["next"])
        spot = self._spot(lines, p, ctx.path)
        if spot.problem or not self._same(spot.current, p.now):
            return Edit(EditStatus.CONFLICT, spot.problem or self._differs(p, ctx.path, spot))
        # the record keeps the exact lines apply replaced: upstream's spelling comes back byte for byte
        if self.exact_undo and ctx.undo and "old" in ctx.undo:
            new = self._put(lines, self._widen(lines, spot, ctx.undo["old"]), ctx.undo["old"], ctx.path, raw=True)
        else:
            new = self._put(lines, self._widen(lines, spot, p.was), p.was, ctx.path)
        return Edit(EditStatus.CHANGED, f"{ctx.path}: {self._what(p)} restored", new)

    def place(self, lines: list[str], p: Any, path: str) -> tuple[int, int, str, str, str] | str:
        """Where conflict markers go for a piece that conflicts: upstream's lines there (0-based,
        end excluded), the piece as BASE had it and as the fork has it laid out there, and how
        the place was found; or why there is none (:mod:`~patchctl.patchsets.kinds.marking`)."""
        spot = self._spot(lines, p, path)
        if spot.problem:
            return spot.problem
        spot = self._widen(lines, spot, p.now)
        ours, theirs = ("".join(self._lay(x, spot)) if x is not None else "" for x in (p.was, p.now))
        return spot.start, spot.end, ours, theirs, f"{self._what(p)}, where the file has it now"

    def part(self, lines: list[str], p: Any, path: str) -> tuple[tuple[int, int], str] | None:
        """What applying to ``lines`` replaces: the 1-based (first, last) lines and the text put there,
        as capture's proof measures a patch; None when the patch would not apply there."""
        spot = self._spot(lines, p, path)
        if spot.problem or not self._same(spot.current, p.was) or self._same(spot.current, p.now):
            return None
        new = split_lines(self._put(lines, self._widen(lines, spot, p.now), p.now, path))
        head = 0
        while head < min(len(lines), len(new)) and lines[head] == new[head]:
            head += 1
        tail = 0
        while tail < min(len(lines), len(new)) - head and lines[-1 - tail] == new[-1 - tail]:
            tail += 1
        return (head + 1, len(lines) - tail), "".join(new[head : len(new) - tail])

    def _finish(self, text: str, path: str) -> str:
        """The file after the piece is put in, where the format asks for more (JSON's commas)."""
        return text

    def _put(self, lines: list[str], spot: Spot, piece: str | None, path: str, *, raw: bool = False) -> str:
        laid = [] if piece is None else split_lines(piece) if raw else self._lay(piece, spot)
        if laid and not laid[-1].endswith("\n"):
            laid[-1] += "\n"
        if laid and spot.start < spot.end == len(lines) and not lines[-1].endswith(("\n", "\r")):
            laid[-1] = laid[-1].rstrip("\r\n")  # the piece takes the file's last line: keep it without a line break
        before = lines[: spot.start]
        if laid and before and not before[-1].endswith(("\n", "\r")):
            before = [*before[:-1], before[-1] + "\n"]  # a last line without a newline gets one before the piece
        return self._finish("".join(before + laid + lines[spot.end :]), path)
