"""Line hunks between BASE and FORK versions of one file, and which of them carry the tag."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Hunk:
    #: 0-based, half-open line ranges in the base and fork texts
    base: tuple[int, int]
    fork: tuple[int, int]
    #: 1-based fork lines that carry the tag
    tagged_lines: tuple[int, ...]

    @property
    def tagged(self) -> bool:
        return bool(self.tagged_lines)

    @property
    def fork_lines(self) -> range:
        """1-based fork lines the hunk covers (empty for a pure deletion)."""
        return range(self.fork[0] + 1, self.fork[1] + 1)


def diff(base: list[str], fork: list[str], tag: re.Pattern[str]) -> list[Hunk]:
    """The changed runs of lines, in file order.

    The common head and tail are set aside first: difflib matches the longest common block
    first, which in code with repeated lines can turn a one-line insertion into a scattered
    edit; trimming keeps a single edit a single hunk.
    """
    head = 0
    while head < min(len(base), len(fork)) and base[head] == fork[head]:
        head += 1
    tail = 0
    while tail < min(len(base), len(fork)) - head and base[-1 - tail] == fork[-1 - tail]:
        tail += 1
    matcher = difflib.SequenceMatcher(
        None, base[head : len(base) - tail], fork[head : len(fork) - tail], autojunk=False
    )
    runs = [
        [i1 + head, i2 + head, j1 + head, j2 + head] for op, i1, i2, j1, j2 in matcher.get_opcodes() if op != "equal"
    ]
    for k, run in enumerate(runs):
        low = runs[k - 1] if k else [0, 0, 0, 0]
        high = runs[k + 1] if k + 1 < len(runs) else [len(base), len(base), len(fork), len(fork)]
        if run[0] == run[1]:  # an insertion: slide it along the fork's lines, its place in BASE alike
            moved = _slide(fork, run[2], run[3], low[3], high[2]) - run[2]
            run[0], run[1], run[2], run[3] = run[0] + moved, run[1] + moved, run[2] + moved, run[3] + moved
        elif run[2] == run[3]:  # a deletion: along BASE's lines
            moved = _slide(base, run[0], run[1], low[1], high[0]) - run[0]
            run[0], run[1], run[2], run[3] = run[0] + moved, run[1] + moved, run[2] + moved, run[3] + moved
    out = []
    for i1, i2, j1, j2 in runs:
        tagged = tuple(n for n in range(j1 + 1, j2 + 1) if tag.search(fork[n - 1]))
        out.append(Hunk((i1, i2), (j1, j2), tagged))
    return out


def why_from(lines: list[str], numbers: list[int], tag: str) -> str:
    """The text after the tag on the first tagged line that has some (``# Uky: because ...``),
    without the closer of a comment the tag sits in (``<!-- # Uky: why -->`` in Markdown or
    HTML, ``/* # Uky: why */`` in CSS or C): the closer is syntax, not part of the reason."""
    rx = re.compile(rf"#\s*{re.escape(tag)}\b[\s:,;-]*(?P<text>.*)$")
    for n in numbers:
        line = lines[n - 1].rstrip("\r\n")
        m = rx.search(line)
        text = m.group("text").strip() if m else ""
        for opener, closer in _COMMENTS:
            if m and opener in line[: m.start()] and text.endswith(closer):
                text = text[: -len(closer)].rstrip()
        if text:
            return text
    return ""


#: comments a tag may sit inside, whose closer ends the line after the reason
_COMMENTS = (("<!--", "-->"), ("/*", "*/"))


def _slide(lines: list[str], start: int, end: int, low: int, high: int) -> int:
    """Where an inserted (or deleted) run ``lines[start:end]`` reads best: its new start.

    A run whose last line equals the line above it can slide up a line, and one whose first line
    equals the line below it down, with the same result. difflib picks one, and in code it often
    picks a run that starts inside one method and ends on the next one's decorator (a fork that
    adds a method above another with the same decorator). That run touches two statements, and
    capture then joins edits that have nothing to do with each other (issue 38 requirement 2).
    The run is moved only where it then starts after a blank line or ends with one, and more so
    than where difflib put it, as git's indent heuristic does; ``low``/``high`` bound it by the
    runs around it.
    """

    def score(a: int, b: int) -> int:
        return (a == 0 or not lines[a - 1].strip()) + (b > a and not lines[b - 1].strip())

    a, b = start, end
    while a > low and b > a and lines[a - 1] == lines[b - 1]:
        a, b = a - 1, b - 1
    best, where = score(start, end), start
    while True:
        if score(a, b) > best:
            best, where = score(a, b), a
        if b < high and b > a and lines[a] == lines[b]:
            a, b = a + 1, b + 1
        else:
            return where
