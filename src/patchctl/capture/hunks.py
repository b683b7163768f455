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
    out = []
    matcher = difflib.SequenceMatcher(
        None, base[head : len(base) - tail], fork[head : len(fork) - tail], autojunk=False
    )
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        i1, i2, j1, j2 = i1 + head, i2 + head, j1 + head, j2 + head
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
