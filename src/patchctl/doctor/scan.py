"""One pass over a log: which signature hits which line, and what surrounds the hits.

Each pattern has an anchor: the longest piece of plain text every match of it contains (read
from the compiled pattern). A line is tried against a signature only when it holds one of the
signature's anchors; substring tests are several times cheaper than one regex of a hundred
alternatives, so a line that matches nothing (nearly every line of a run's log) costs a few
microseconds. Per signature the scan keeps counts and a few lines, never the hits themselves, so a
log of any size streams through in constant memory.

Three things are decided per hit line, because a maintainer decides them by looking at it:
- is it a warning (``UserWarning``, ``WARNING``, glog's ``W``)? A warning does not end a run;
- is it confirmed: does a confirming line (a frame of the right library, say) lie within
  :data:`CONFIRM_WINDOW` lines before or after? Without it, the finding is only possible. Each
  line is searched for a signature's confirming lines at most once, however many hits it is
  near, so a log of long lines costs its length, not its length times the hits;
- does a more specific signature explain the same line (``refines``)?
"""

from __future__ import annotations

import functools
import re
import sys
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from patchctl.doctor.signatures import CONFIRM_WINDOW, Signature
from patchctl.doctor.versions import NAMES, seen_versions

if sys.version_info >= (3, 11):  # the parsed form of a pattern, to read its anchor
    from re import _constants as _C
    from re import _parser
else:  # pragma: no cover
    import sre_constants as _C
    import sre_parse as _parser

#: longest excerpt kept per finding
EXCERPT = 300
#: markers of a line that reports a warning, not the error that ended the run; the bracketed
#: glog prefix ("[2025-10-25 13:08:43,123 W 812 812]") excludes "[" too, so that a line of many
#: "[" is searched in linear time (each start's run ends at the next "[")
WARNING_LINE = re.compile(r"\bWARNING\b|\bWarning\b|Warning:|\bW\d{4} |\[[^\[\]]* W \d+ \d+\]")
#: the process a Ray-prefixed line comes from: "(WorkerDict pid=812, ip=...)"
PROCESS = re.compile(r"\((\w+) pid=(\d+)")
#: the package of a traceback frame in an installed tree: ``File ".../site-packages/tensordict/x.py"``
#: (``[\w.]+`` stops at "/", so a line of "site-packages/" repeated is searched once per start)
FRAME_PACKAGE = re.compile(r'File "[^"]*(?<![\w-])(?:site|dist)-packages/(\w+)/')
#: a signature's confirming lines are searched for at most this many hits (a log with a
#: million unconfirmed hits would otherwise cost a million window searches)
CONFIRM_TRIES = 50
#: an anchor shorter than this would pass too many lines; such a pattern is tried on every line
MIN_ANCHOR = 3
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def printable(line: str) -> str:
    """The line as a terminal may show it: colour codes dropped, other control characters as U+FFFD."""
    return _CONTROL.sub("\ufffd", _ANSI.sub("", line)).strip()


def _runs(items: Any, folded: bool, out: list[tuple[str, bool]]) -> None:
    """The plain-text runs of a parsed pattern that every match contains: literals in sequence,
    also inside groups (a group that must match), not inside branches, classes or repeats."""
    text: list[str] = []
    for op, arg in items:
        if op is _C.LITERAL:
            text.append(chr(arg))
            continue
        if text:
            out.append(("".join(text), folded))
            text = []
        if op is _C.SUBPATTERN:
            _group, add_flags, _del_flags, sub = arg
            _runs(sub, folded or bool(add_flags & re.IGNORECASE), out)
    if text:
        out.append(("".join(text), folded))


@functools.cache  # parsing a pattern costs more than scanning a short log with it
def anchor(pattern: re.Pattern[str]) -> tuple[str, bool]:
    """The longest plain text every match of ``pattern`` contains ("" when none), and whether it
    is matched case-insensitively (then lower-cased)."""
    out: list[tuple[str, bool]] = []
    _runs(_parser.parse(pattern.pattern, pattern.flags), bool(pattern.flags & re.IGNORECASE), out)
    if not out:
        return "", False
    text, folded = max(out, key=lambda r: len(r[0]))
    return (text.lower() if folded else text), folded


def _excerpt(line: str) -> str:
    text = printable(line)
    return text if len(text) <= EXCERPT else text[:EXCERPT] + "..."


@dataclass
class Hits:
    """What the scan saw of one signature."""

    first: tuple[int, str] | None = None
    #: the first hit that is not a warning: the evidence of a fatal finding
    fatal: tuple[int, str] | None = None
    #: the first hit no refining signature explains
    solo: tuple[int, str] | None = None
    count: int = 0
    #: hits on lines a refining signature also hit, per refining signature
    shared: dict[str, int] = field(default_factory=dict)
    #: hits on lines a generic signature this one refines also hit
    over: int = 0
    processes: set[str] = field(default_factory=set)
    captures: dict[str, str] = field(default_factory=dict)
    confirmed: bool = False
    tries: int = 0
    #: the last line searched for a confirming line (each line is searched once)
    searched: int = 0


def _names_a_package(line: str) -> bool:
    """Whether the line starts "vllm: 0.3.2", as users list their versions (cheap: most lines have
    no colon within their first 20 characters)."""
    colon = line.find(":", 0, 20)
    return colon > 0 and line[:colon].strip().lower() in NAMES


class Scan:
    """Feed it lines with :meth:`run`; then :attr:`hits` holds what each signature hit."""

    def __init__(self, signatures: list[Signature]) -> None:
        self.signatures = signatures
        self.hits: dict[str, Hits] = {}
        self.versions: dict[str, list[str]] = {}
        #: the installed package of the last traceback frame read ("tensordict" for
        #: ``.../site-packages/tensordict/memmap.py``): the importer when an ImportError follows
        self.frame_package = ""
        self.lines = 0
        self._window: deque[str] = deque(maxlen=CONFIRM_WINDOW)
        self._pending: dict[str, tuple[Signature, int]] = {}  # id -> (signature, last line to look at)
        self._refined_by = {s.id: [r for r in signatures if s.id in r.refines] for s in signatures}
        self._anchors: list[tuple[str, int]] = []  # (plain text, signature index)
        self._folded: list[tuple[str, int]] = []  # the same for case-insensitive patterns, lower-cased
        self._always: list[int] = []  # signatures with a pattern that has no anchor: tried on every line
        self._warning = (0, False)  # (line number, whether it is a warning): searched once per line
        for i, sig in enumerate(signatures):
            for text, folded in dict.fromkeys(anchor(pattern) for pattern in sig.patterns):
                if len(text) < MIN_ANCHOR:
                    self._always.append(i)
                else:
                    (self._folded if folded else self._anchors).append((text, i))

    def run(self, lines: Iterable[str]) -> Scan:
        n = 0
        anchors, folded, always = self._anchors, self._folded, self._always
        for n, line in enumerate(lines, 1):
            if self._pending:
                self._look_ahead(n, line)
            found = [i for text, i in anchors if text in line]
            if folded:
                low = line.lower()
                found += [i for text, i in folded if text in low]
            if found or always:
                self._line(n, line, sorted(set(found + always)))
            if "ersion" in line or "==" in line or " : " in line or found or _names_a_package(line):
                seen_versions(line, self.versions)
            if "packages/" in line and (frame := FRAME_PACKAGE.search(line)):
                self.frame_package = frame.group(1)
            self._window.append(line)
        self.lines = n
        return self

    def _line(self, n: int, line: str, candidates: list[int]) -> None:
        hit: dict[str, re.Match[str]] = {}
        for sig in (self.signatures[i] for i in candidates):
            m = next((m for p in sig.patterns if (m := p.search(line))), None)
            if m is not None and not any(u.search(line) for u in sig.unless):
                hit[sig.id] = m
        for sig in (self.signatures[i] for i in candidates):
            if sig.id in hit:
                self._record(sig, n, line, hit[sig.id], [r.id for r in self._refined_by[sig.id] if r.id in hit])
                if any(g in hit for g in sig.refines):
                    self.hits[sig.id].over += 1

    def _record(self, sig: Signature, n: int, line: str, m: re.Match[str], refiners: list[str]) -> None:
        h = self.hits.setdefault(sig.id, Hits())
        h.count += 1
        h.first = h.first or (n, _excerpt(line))
        if sig.severity == "fatal" and h.fatal is None and not self._is_warning(n, line):
            h.fatal = (n, _excerpt(line))
        for r in refiners:
            h.shared[r] = h.shared.get(r, 0) + 1
        if not refiners and h.solo is None:
            h.solo = (n, _excerpt(line))
        if (proc := PROCESS.search(line)) and len(h.processes) < 1000:
            h.processes.add(proc.group(0))
        for pattern in sig.patterns:  # each named value: the first one the log shows
            if pattern.groupindex and (c := m if pattern is m.re else pattern.search(line)):
                for k, v in c.groupdict().items():
                    if v is not None:
                        h.captures.setdefault(k, v)
        if sig.versions and self.frame_package:
            h.captures.setdefault("importer", self.frame_package)
        if sig.confirm and not h.confirmed and h.tries < CONFIRM_TRIES:
            h.tries += 1
            first = n - len(self._window)  # the window holds the lines first .. n-1
            unseen = [x for i, x in enumerate(self._window, first) if i > h.searched]
            if n > h.searched:
                unseen.append(line)
            h.searched = n
            if any(c.search(x) for c in sig.confirm for x in unseen):
                h.confirmed = True
            else:
                self._pending[sig.id] = (sig, n + CONFIRM_WINDOW)

    def _is_warning(self, n: int, line: str) -> bool:
        """Whether line ``n`` is a warning; each marker holds a "W", which most lines lack."""
        if self._warning[0] != n:
            self._warning = (n, "W" in line and WARNING_LINE.search(line) is not None)
        return self._warning[1]

    def _look_ahead(self, n: int, line: str) -> None:
        for key, (sig, last) in list(self._pending.items()):
            h = self.hits[sig.id]
            if h.confirmed or n > last:
                del self._pending[key]
            elif n > h.searched:
                h.searched = n
                if any(c.search(line) for c in sig.confirm):
                    h.confirmed = True
                    del self._pending[key]
