"""Matching a log against the signatures, line by line, so a log of any size streams through.

One combined pattern screens each line; only lines it hits are tried against each signature, so
the common case (a line that matches nothing) costs one regex search.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from patchctl.doctor.signatures import Signature

#: longest excerpt kept per match
EXCERPT = 300
#: ANSI colour and cursor sequences (Ray and vLLM colour their log prefixes)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@dataclass(frozen=True)
class Match:
    signature: Signature
    #: 1-based line of the first hit
    first_line: int
    #: how many lines hit
    count: int
    #: the first hit's line, trimmed
    excerpt: str


@dataclass(frozen=True)
class Diagnosis:
    #: in the order their first hit appears in the log
    matches: tuple[Match, ...]
    #: lines read
    lines: int
    #: what was read ("train.log", "<stdin>")
    source: str = ""
    #: signatures tried
    tried: int = field(default=0)


def printable(line: str) -> str:
    """The line as a terminal may show it: colour codes dropped, other control characters as U+FFFD."""
    return _CONTROL.sub("\ufffd", _ANSI.sub("", line)).strip()


def diagnose(lines: Iterable[str], signatures: list[Signature], source: str = "") -> Diagnosis:
    try:
        screen: re.Pattern[str] | None = re.compile("|".join(f"(?:{p.pattern})" for s in signatures for p in s.patterns))
    except re.error:  # a pattern with inline flags cannot be combined; try each on every line
        screen = None
    first: dict[str, tuple[int, str]] = {}
    counts: dict[str, int] = {}
    n = 0
    for n, line in enumerate(lines, 1):
        if screen is not None and not screen.search(line):
            continue
        for sig in signatures:
            if any(p.search(line) for p in sig.patterns):
                counts[sig.id] = counts.get(sig.id, 0) + 1
                if sig.id not in first:
                    text = printable(line)
                    first[sig.id] = (n, text if len(text) <= EXCERPT else text[:EXCERPT] + "...")
    by_id = {s.id: s for s in signatures}
    matches = sorted((Match(by_id[i], ln, counts[i], ex) for i, (ln, ex) in first.items()),
                     key=lambda m: m.first_line)
    return Diagnosis(tuple(matches), n, source, len(signatures))
