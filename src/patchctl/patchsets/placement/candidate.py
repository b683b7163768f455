"""The best candidate place for a structural patch that conflicts, for ``apply --conflicts=markers``.

Where the patch's anchors still lead somewhere, that place is the candidate (its text differs
from the patch's original: that is the conflict). Where they lead nowhere, the candidate is
found the way a person would look: in the patch's scope, the statement whose first line reads
most like the anchor above (at least :data:`MIN_RATIO` alike), followed by as many statements
as the patch's original holds, or the statement most like the anchor below, preceded by them,
whichever of the two reads more alike (upstream often rewrites one neighbour and keeps the
other). No candidate is offered below that bar: markers at a guessed
place are worse than a refusal.

Where the anchor fits more than one place (issue 38 requirement 5: ``update_actor`` holding the
anchor line twice), the place whose surroundings match the patch's wins: the other anchor reads
alike there too, or, where the patch has none on that side, the place ends (or starts) its body
as the fork's edit did. The reason says how many places fit and lists them; where the
surroundings do not tell them apart either, no candidate is offered and the reason lists them.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass, replace

from patchctl.patchsets.placement import anchors as st
from patchctl.patchsets.placement import gaptext, places
from patchctl.patchsets.placement.places import Params

MIN_RATIO = 0.6
_NONE = (
    f"no statement of {{scope}} reads at least {MIN_RATIO:.0%} like its anchors, "
    "and markers at a guess would be worse than none"
)


@dataclass(frozen=True)
class Candidate:
    """Lines ``first``..``last`` (``last == first - 1``: an empty place before line ``first``)."""

    first: int
    last: int
    indent: str
    #: how it was found, for the row's reason
    how: str
    #: where the patch's own anchors led nowhere: the anchors and block headers of this place
    above: tuple[str, ...] = ()
    below: tuple[str, ...] = ()
    blocks: tuple[str, ...] = ()


def propose(text: str, p: Params, path: str) -> Candidate | str:
    """The candidate place, or why none is offered (:meth:`~.where.Placement.candidate` asks
    :func:`best` with what it has found already)."""
    return best(places.find(text, p, path).near, st.parsed(text, path), p)


def best(near: list[places.Site], file: st.Parsed, p: Params) -> Candidate | str:
    """The candidate place in ``file``, given ``near``, the places its anchors lead to (whatever
    they hold); or why none is offered."""
    if len(near) == 1 or (near and p.mode != "statements"):  # for a header: the definition's header, as the tree has it
        s = near[0]
        return Candidate(s.first, s.last, s.indent, "where its anchors lead")
    if near:
        return _pick_site(near, p)
    if p.mode != "statements":
        return _NONE.format(scope=p.scope or "the module")
    keys = ([(p.above[-1], True)] if p.above else []) + ([(p.below[0], False)] if p.below else [])
    lines = file.lines
    found: list[_Alike] = []
    for scope in st.find_scopes(file.tree, p.scope):
        for i, body, blocks in _statements(lines, scope, ()):
            for key, after in keys:  # the anchor above, else the one below, whichever reads more alike
                ratio = difflib.SequenceMatcher(None, st.head(lines, body[i]), key).ratio()
                if ratio >= MIN_RATIO:
                    found.append(_Alike(ratio, i, body, blocks, key, after))
    if not found:
        return _NONE.format(scope=p.scope or "the module")
    top = max(a.ratio for a in found)
    count = gaptext.count_statements(p.before) or 0
    spans: dict[tuple[int, int], _Alike] = {}  # the anchor above and the one below may name one place
    for a in found:
        if a.ratio == top:
            c = _candidate(lines, a, count)
            spans.setdefault((c.first, c.last), a)
    tied = list(spans.values())
    scored = [(_surroundings(lines, a, p, count), a) for a in tied]
    best = max(score for score, _ in scored)
    winners = [a for score, a in scored if score == best]
    where = ", ".join(f"line {a.body[a.i].lineno}" for a in tied)
    if len(winners) > 1:
        return (
            f"its anchor `{winners[0].key}` fits {len(tied)} places ({where}) and their surroundings do not "
            "tell which is the fork's; markers at a guess would be worse than none"
        )
    chosen = _candidate(lines, winners[0], count)
    if len(tied) > 1:
        chosen = replace(
            chosen,
            how=f"{chosen.how}; that anchor fits {len(tied)} places ({where}), and this one's surroundings match "
            "the fork's",
        )
    return chosen


@dataclass(frozen=True)
class _Alike:
    """A statement that reads like one of the patch's anchors, ``ratio`` alike."""

    ratio: float
    i: int
    body: list[ast.stmt]
    blocks: tuple[str, ...]
    key: str
    #: the place follows the statement (it reads like the anchor above), else precedes it
    after: bool


def _alike(a: str, b: str) -> bool:
    return difflib.SequenceMatcher(None, a, b).ratio() >= MIN_RATIO


def _surroundings(lines: list[str], a: _Alike, p: Params, count: int) -> int:
    """How many of the patch's surroundings the place has: the anchor on the other side reads
    alike there (or the place ends, or starts, its body where the patch has no anchor on that
    side), and the next anchor out on the same side reads alike too."""
    body, i = a.body, a.i
    if a.after:
        j = i + 1 + count  # the statement after the place
        other = (j < len(body) and _alike(st.head(lines, body[j]), p.below[0])) if p.below else j >= len(body)
        outer = len(p.above) > 1 and i > 0 and _alike(st.head(lines, body[i - 1]), p.above[-2])
    else:
        j = i - count - 1  # the statement before the place
        other = (j >= 0 and _alike(st.head(lines, body[j]), p.above[-1])) if p.above else j < 0
        outer = len(p.below) > 1 and i + 1 < len(body) and _alike(st.head(lines, body[i + 1]), p.below[1])
    return 2 * other + outer


def _pick_site(near: list[places.Site], p: Params) -> Candidate | str:
    """Among several places the anchors lead to, the one whose text reads most like the patch's
    original; several equally alike: none."""
    ratios = [difflib.SequenceMatcher(None, s.text, p.before).ratio() for s in near]
    best = max(ratios)
    where = ", ".join(f"lines {s.first}-{s.last}" if s.last >= s.first else f"before line {s.first}" for s in near)
    if ratios.count(best) > 1:
        return (
            f"its anchors fit {len(near)} places ({where}) and none reads more like the original than the others; "
            "markers at a guess would be worse than none"
        )
    s = near[ratios.index(best)]
    return Candidate(
        s.first,
        s.last,
        s.indent,
        f"where its anchors lead; they fit {len(near)} places ({where}), and this one reads most like the original",
    )


def _candidate(lines: list[str], a: _Alike, count: int) -> Candidate:
    """The place next to the statement ``a`` found, holding as many statements as the original."""
    ratio, i, body, blocks, key, after = a.ratio, a.i, a.body, a.blocks, a.key, a.after
    if after:  # the place follows the statement most like the anchor above
        taken, first = body[i + 1 : i + 1 + count], (body[i].end_lineno or body[i].lineno) + 1
        last = (taken[-1].end_lineno or taken[-1].lineno) if taken else first - 1
        above, below = body[i : i + 1], body[i + 1 + count : i + 2 + count]
    else:  # the place precedes the statement most like the anchor below
        taken, last = body[max(i - count, 0) : i], st.first_line(body[i]) - 1
        first = st.first_line(taken[0]) if taken else last + 1
        above, below = body[max(i - count, 0) - 1 : max(i - count, 0)] if i - count > 0 else [], body[i : i + 1]
    line = lines[body[i].lineno - 1]
    side = "after" if after else "before"
    return Candidate(
        first,
        last,
        line[: len(line) - len(line.lstrip())],
        f"{side} line {body[i].lineno}, which reads most like its anchor `{key}` ({ratio:.0%} alike)",
        tuple(st.head(lines, x) for x in above),
        tuple(st.head(lines, x) for x in below),
        blocks,
    )


def _statements(
    lines: list[str], node: ast.AST, blocks: tuple[str, ...]
) -> list[tuple[int, list[ast.stmt], tuple[str, ...]]]:
    """Each statement a patch's ``blocks`` can reach under ``node`` (bodies of loops, branches,
    ``with`` and ``try``), as its index in its body, that body and the block headers leading to it."""
    body: list[ast.stmt] = getattr(node, "body", [])
    out = []
    for i, stmt in enumerate(body):
        out.append((i, body, blocks))
        if isinstance(stmt, st.BLOCKS):
            out += _statements(lines, stmt, (*blocks, st.head(lines, stmt)))
    return out
