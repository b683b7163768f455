"""From a scan of the log to findings ranked the way a maintainer reads a failed run.

The root cause comes first:
1. an error outranks a warning: what ended the run, not the noise before it;
2. a likely finding outranks a possible one (a pattern that also matches other failures);
3. a specific cause outranks a generic one ("a Ray worker died" only points elsewhere);
4. among equals, the earliest error: in a cascade the first failure causes the later ones.

One cause seen on many lines is one finding, with its count and the processes it was seen in.
A generic hit that a confirmed specific finding explains on the same line is not counted twice,
and an unconfirmed specific reading of a generic hit is left to the generic finding's advice.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from patchctl.doctor.scan import Scan, printable
from patchctl.doctor.signatures import Signature
from patchctl.doctor.versions import mismatch

__all__ = ["Diagnosis", "Match", "diagnose", "printable"]
#: "{name=default}" in a resolution: the value a pattern's named group captured, else the default
#: (which holds no brace: "[^}]*" would run on over every later "{" of a line of them, quadratic)
_SLOT = re.compile(r"\{(\w+)=([^{}]*)\}")


@dataclass(frozen=True)
class Match:
    signature: Signature
    #: 1-based line of the evidence: the first error line of this failure (else its first hit)
    line: int
    #: the evidence line, trimmed
    excerpt: str
    #: how many lines hit
    count: int
    #: 1-based line of the first hit (a warning may come before the error)
    first_line: int
    #: "likely", or "possible" when the confirming condition was not met
    confidence: str = "likely"
    #: whether it was seen as an error (not only in warnings)
    fatal: bool = True
    #: distinct Ray processes ("WorkerDict pid=812") the hits came from
    processes: int = 0
    #: values the patterns captured, e.g. the GPUs Ray saw
    captures: tuple[tuple[str, str], ...] = ()
    #: package versions the log shows, for signatures that ask for them
    versions: tuple[tuple[str, tuple[str, ...]], ...] = field(default_factory=tuple)

    @property
    def headline(self) -> str:
        """The title, worded as a possibility when it is one."""
        t = self.signature.title
        return t if self.confidence == "likely" else f"possibly {t[0].lower()}{t[1:]}"

    def resolves(self) -> list[tuple[str, str]]:
        """(kind, text) of what resolves it, with the values the log showed filled in."""
        got = dict(self.captures)
        return [
            (k, _SLOT.sub(lambda m: got.get(m.group(1)) or m.group(2), v)) for k, v in self.signature.resolves.items()
        ]

    @property
    def seen(self) -> str:
        """The versions the log shows, as one phrase ("" when none or not asked for)."""
        return "; ".join(f"{p} {', '.join(v)}" for p, v in self.versions)

    @property
    def verdict(self) -> str:
        """For a version finding, the two packages that do not fit and their versions, with what to
        install ("" when the log names neither)."""
        if not self.signature.versions:
            return ""
        return mismatch(dict(self.captures), {p: list(v) for p, v in self.versions})

    @property
    def where(self) -> str:
        """Where and how often: "line 812", "line 812; 8 lines in 4 processes, first at line 640"."""
        parts = [f"line {self.line}"]
        if self.count > 1:
            parts.append(f"{self.count} lines" + (f" in {self.processes} processes" if self.processes > 1 else ""))
        if self.first_line != self.line:
            parts.append(f"first at line {self.first_line}")
        return "; ".join(parts)

    def to_json(self) -> dict[str, object]:
        s = self.signature
        resolves: dict[str, list[str]] = {}
        for kind, text in self.resolves():
            resolves.setdefault(kind, []).append(text)
        return {
            "id": s.id,
            "title": s.title,
            "headline": self.headline,
            "confidence": self.confidence,
            "fatal": self.fatal,
            "generic": s.generic,
            "line": self.line,
            "first_line": self.first_line,
            "count": self.count,
            "processes": self.processes,
            "excerpt": self.excerpt,
            "cause": s.cause,
            "fix": s.fix,
            "resolves": resolves,
            "captures": dict(self.captures),
            "versions": {p: list(v) for p, v in self.versions},
            "verdict": self.verdict,
            "source": s.source,
        }


@dataclass(frozen=True)
class Diagnosis:
    #: root cause first (see the module's docstring)
    matches: tuple[Match, ...]
    #: lines read
    lines: int
    #: what was read ("train.log", "<stdin>")
    source: str = ""
    #: signatures tried
    tried: int = field(default=0)

    @property
    def root(self) -> Match | None:
        return self.matches[0] if self.matches else None

    def to_json(self) -> dict[str, object]:
        return {
            "source": self.source,
            "lines": self.lines,
            "signatures": self.tried,
            "root": self.root.signature.id if self.root else None,
            "matches": [m.to_json() for m in self.matches],
        }


def _match(sig: Signature, scan: Scan, sigs: dict[str, Signature]) -> Match | None:
    h = scan.hits[sig.id]
    # a refining signature explains the shared lines only where it is itself sure
    count = h.count - sum(n for r, n in h.shared.items() if scan.hits[r].confirmed or not sigs[r].confirm)
    if count <= 0:
        return None
    explained = count < h.count
    evidence = h.solo if explained and h.solo else (h.fatal or h.first)
    assert evidence is not None and h.first is not None
    confirmed = h.confirmed or not sig.confirm
    if not confirmed and h.over == h.count:
        return None  # an unconfirmed refinement of a generic finding on the same lines adds nothing to it
    confidence = "likely" if sig.confidence == "likely" and confirmed else "possible"
    seen = tuple((p, tuple(v)) for p, v in scan.versions.items()) if sig.versions else ()
    return Match(
        sig,
        evidence[0],
        evidence[1],
        count,
        h.first[0],
        confidence,
        h.fatal is not None,
        len(h.processes),
        tuple(sorted(h.captures.items())),
        seen,
    )


def rank_key(m: Match) -> tuple[int, int, int, int]:
    return (0 if m.fatal else 1, 0 if m.confidence == "likely" else 1, 1 if m.signature.generic else 0, m.line)


def diagnose(lines: Iterable[str], signatures: list[Signature], source: str = "") -> Diagnosis:
    """Scan ``lines`` once and rank what was found, root cause first."""
    scan = Scan(signatures).run(lines)
    sigs = {s.id: s for s in signatures}
    found = [m for i in scan.hits if (m := _match(sigs[i], scan, sigs))]
    return Diagnosis(tuple(sorted(found, key=rank_key)), scan.lines, source, len(signatures))
