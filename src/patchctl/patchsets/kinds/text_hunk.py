"""text-hunk: one hunk of a text file (docs, shell, .gitignore, ...), placed by its context with fuzz.

It behaves as ``patch`` does: the hunk's lines are looked for anywhere in the file (upstream
moves text around), the match nearest the line the fork had wins, and when the whole hunk is
not found, up to ``fuzz`` lines of context are left out at each end (the changed lines never
are). Lines compare without trailing spaces. When nothing fits, the message names the line of
the file that differs from the hunk, and how.

In a YAML file a hunk whose context also fits inside another section would land there and still
load (issue 38): ``parent``, the key path the hunk's first new line sits under in the fork
(``patchctl capture`` writes it), must be the one it sits under where it lands, or the hunk is a
conflict. A hunk captured before ``parent`` existed is not checked so; the load check in the
planner (:mod:`patchctl.patchsets.loads`) still refuses one that breaks the file.

A hunk whose context is blank lines only (a line the fork inserted between two blank lines of
a README) has nothing of its own to be found by: any blank lines near its line would do, and
it would land in the wrong paragraph. ``merge_only`` (``patchctl capture`` writes it) says so:
such a hunk places itself only on its own base text, exactly where it was captured, and
everywhere else leaves the placing to the 3-way merge from that text
(:mod:`patchctl.patchsets.threeway`), which finds the place by what lies around it in the
base, as ``git apply -3`` does (issue 38). Without a base text it conflicts, and says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from patchctl.errors import ManifestError
from patchctl.patchsets.kinds import keypath
from patchctl.patchsets.kinds.base import Context, Edit, EditStatus
from patchctl.patchsets.kinds.bom import strip_bom
from patchctl.patchsets.kinds.swap import Spot, Swap
from patchctl.patchsets.model import Patch
from patchctl.patchsets.placement.pyparse import split_lines
from patchctl.schema import Field, Schema


@dataclass(frozen=True)
class Params:
    #: the hunk's lines as upstream had them (context and removed lines)
    was: str
    #: the hunk's lines as the fork has them (context and added lines)
    now: str
    #: 1-based line where the hunk started in the upstream it was captured from
    line: int
    #: context lines that may be left out at each end to find the hunk
    fuzz: int
    #: YAML: the key path the hunk's first new line sits under in the fork; None: not checked
    parent: tuple[str, ...] | None = None
    #: its context is blank lines only: placed on its base text, elsewhere by the 3-way merge only
    merge_only: bool = False


def _rows(text: str) -> list[str]:
    return [ln.rstrip() for ln in split_lines(text)]


def shared_ends(was: list[str], now: list[str]) -> tuple[int, int]:
    """How many lines the two sides share at the top and then at the bottom (a hunk's context;
    the stretch an edit or a commit changes lies between)."""
    top = 0
    while top < min(len(was), len(now)) and was[top] == now[top]:
        top += 1
    bottom = 0
    while bottom < min(len(was), len(now)) - top and was[-1 - bottom] == now[-1 - bottom]:
        bottom += 1
    return top, bottom


class TextHunk(Swap):
    name: ClassVar[str] = "text-hunk"
    description: ClassVar[str] = "Change one hunk of a text file, placed by its context as patch does (with fuzz)."
    # the hunk is found again by its text, and a fuzzy match may span other lines than apply replaced
    exact_undo: ClassVar[bool] = False
    params_schema: ClassVar[Schema] = {
        # required below: blank lines only are allowed where merge_only says the base text places it
        "was": Field(str, False, "the hunk's lines as upstream had them, context included"),
        "now": Field(str, True, "the hunk's lines as the patch writes them, context included"),
        "line": Field(int, False, "the line the hunk starts at upstream, to choose among matches"),
        "fuzz": Field(int, False, "context lines that may be left out at each end (default 2)"),
        "parent": Field(list, False, "YAML: the key path its first new line sits under ([] for the top)", item=str),
        "merge_only": Field(bool, False, "placed only by the 3-way merge from its base text (its context is blank)"),
    }

    def parse_params(self, raw: dict[str, Any], patchset_root: Path, manifest: Path, patch_id: str) -> Params:
        if "was" not in raw or (not raw["was"].strip() and not raw.get("merge_only", False)):
            raise ManifestError(
                manifest,
                "params.was",
                "is missing" if "was" not in raw else "is empty",
                "write the hunk's lines as upstream had them, context included",
                patch_id,
            )
        if _rows(raw["was"]) == _rows(raw["now"]):
            raise ManifestError(
                manifest,
                "params.now",
                "is the same as params.was (trailing spaces aside)",
                "write the hunk's lines as the patch changes them",
                patch_id,
            )
        line, fuzz = raw.get("line", 1), raw.get("fuzz", 2)
        if line < 1 or not 0 <= fuzz <= 5:
            raise ManifestError(
                manifest,
                "params.line" if line < 1 else "params.fuzz",
                "is out of range",
                "line counts from 1; fuzz is 0 to 5",
                patch_id,
            )
        parent = tuple(raw["parent"]) if "parent" in raw else None
        return Params(raw["was"], raw["now"], line, fuzz, parent, bool(raw.get("merge_only", False)))

    def apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        if p.merge_only and text is not None and text != _base_text(ctx):
            return Edit(
                EditStatus.CONFLICT,
                f"{ctx.path}: {self._what(p)} has only blank lines around it, which do not say where it goes; "
                "only the 3-way merge from its base text places it",
            )
        edit = super().apply(text, patch, ctx)
        if edit.status is not EditStatus.CHANGED or p.parent is None or text is None or edit.text is None:
            return edit
        if keypath.fmt_of(ctx.path) != "yaml":
            return edit
        wrong = self._misplaced(split_lines(text), split_lines(edit.text), p, ctx.path)
        return Edit(EditStatus.CONFLICT, wrong) if wrong else edit

    def _misplaced(self, old: list[str], new: list[str], p: Params, path: str) -> str | None:
        """Why the hunk's first new line would sit under another key than in the fork, else None."""
        k = first_new(p.was, p.now)
        if k is None or p.parent is None:
            return None
        spot = self._spot(old, p, path)
        at = spot.start + k - spot.trim[0]
        here = keypath.parent_at(new, at)
        if here == p.parent:
            return None
        return (
            f"{path}:{at + 1}: the hunk's new line {new[at].strip()[:60]!r} would sit under {keypath.under(here)}, "
            f"where the fork has it under {keypath.under(p.parent)}: its context fits another section here; "
            f"put the hunk's lines under {keypath.under(p.parent)} by hand"
        )

    def _what(self, p: Params) -> str:
        changed = [ln for ln in _rows(p.now) if ln not in _rows(p.was)] or [
            ln for ln in _rows(p.was) if ln not in _rows(p.now)
        ]
        return f"the hunk at line {p.line} ({changed[0].strip()[:60]!r})" if changed else f"the hunk at line {p.line}"

    def _same(self, a: str | None, b: str | None) -> bool:
        return (a is None) == (b is None) and (a is None or b is None or _rows(a) == _rows(b))

    def _spot(self, lines: list[str], p: Params, path: str) -> Spot:
        text = [ln.rstrip() for ln in lines]
        was, now = _rows(p.was), _rows(p.now)
        top, bottom = shared_ends(was, now)
        for fuzz in range(p.fuzz + 1):
            cut = (min(fuzz, top), min(fuzz, bottom))
            found = [
                (abs(i - (p.line - 1)), i, piece, side)
                for piece, side in ((now, p.now), (was, p.was))
                for i in _matches(text, piece[cut[0] : len(piece) - cut[1]])
            ]
            if found:
                _, i, piece, side = min(found, key=lambda f: f[:2])
                n = len(piece) - cut[0] - cut[1]
                return Spot(i, i + n, side, trim=cut)
        return Spot(0, 0, "", _nowhere(text, was, path))

    def _lay(self, piece: str, spot: Spot) -> list[str]:
        lines = split_lines(piece)
        return lines[spot.trim[0] : len(lines) - spot.trim[1]]

    def place(self, lines: list[str], p: Params, path: str) -> tuple[int, int, str, str, str] | str:
        """Where the hunk is, else the window of the file most like it (as its conflict names it)."""
        if p.merge_only:
            return (
                f"{path}: the hunk at line {p.line} has only blank lines around it, so no place for markers "
                "can be told; add its lines by hand"
            )
        found = super().place(lines, p, path)
        if not isinstance(found, str):
            return found
        best, at = _best([ln.rstrip() for ln in lines], _rows(p.was))
        if best <= 0:
            return found
        n = min(len(split_lines(p.was)), len(lines) - at)
        how = f"lines {at + 1}-{at + n}, where {best} of the hunk's {len(split_lines(p.was))} lines match"
        return at, at + n, p.was, p.now, how


def _base_text(ctx: Context) -> str | None:
    """The base text capture kept of the file (None: none kept), as the 3-way fallback reads it."""
    from patchctl.patchsets import bases  # only a merge-only hunk needs it

    text = bases.load(ctx.patchset_root).get(ctx.path)
    return strip_bom(text) if text is not None else None


def first_new(was: str, now: str) -> int | None:
    """The index, among ``now``'s lines, of the first line the hunk adds or changes that is neither
    blank nor a comment (where it sits is what counts); None when it adds no such line."""
    lines = split_lines(now)
    top, bottom = shared_ends(_rows(was), _rows(now))
    return next((k for k in range(top, len(lines) - bottom) if keypath.content(lines[k])), None)


def _matches(text: list[str], piece: list[str]) -> list[int]:
    if not piece:
        return []
    n = len(piece)
    return [i for i in range(len(text) - n + 1) if text[i] == piece[0] and text[i : i + n] == piece]


def _best(text: list[str], was: list[str]) -> tuple[int, int]:
    """The window of ``text`` with the most lines as ``was`` has them: (how many, where)."""
    best, at = -1, 0
    for i in range(max(1, len(text) - len(was) + 1)):
        score = sum(a == b for a, b in zip(text[i : i + len(was)], was, strict=False))
        if score > best:
            best, at = score, i
    return best, at


def _nowhere(text: list[str], was: list[str], path: str) -> str:
    """The window of the file most like the hunk, and its first line that is not as the hunk expects."""
    if not was:
        return f"{path}: the hunk has no lines to find it by"
    best, at = _best(text, was)
    if best <= 0:
        return f"{path}: none of the hunk's lines is in the file (it expects {was[0].strip()!r}); upstream rewrote it"
    k = next(k for k, want in enumerate(was) if at + k >= len(text) or text[at + k] != want)
    has = repr(text[at + k].strip()) if at + k < len(text) else "the end of the file"
    return (
        f"{path}:{at + k + 1}: upstream has {has} where the hunk expects {was[k].strip()!r} "
        f"({best} of its {len(was)} lines match there)"
    )
