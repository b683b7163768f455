"""Scoring ``doctor`` against the corpus of real failures in ``corpus/`` (shared by the test and
``benchmarks/bench_doctor.py``, which also scores the previous matcher with it).

Each entry names the signature ids a maintainer's category maps to (``expect``), the ids that
count as half right (``partial``), and whether it was held back while the patterns were written
(``split``). A whole-run entry also names a ``prefix``: the first ``prefix_lines`` lines of one of
our own GPU runs' logs, which come before its ``log``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CORPUS = Path(__file__).parent / "corpus"
ROOT = Path(__file__).resolve().parents[2]
#: the outcomes, in the order the reports list them
OUTCOMES = ("correct", "partial", "none", "wrong")


@dataclass(frozen=True)
class Entry:
    name: str
    source: str
    category: str
    expect: tuple[str, ...]
    partial: tuple[str, ...]
    split: str
    text: str

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()


def load(corpus: Path = CORPUS) -> list[Entry]:
    entries = []
    for path in sorted(corpus.glob("*.toml")):
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        text = doc["log"]
        if "prefix" in doc:
            prefix = (ROOT / doc["prefix"]).read_text(encoding="utf-8").splitlines(keepends=True)
            text = "".join(prefix[: doc["prefix_lines"]]) + text
        entries.append(
            Entry(
                path.stem,
                doc["source"],
                doc["category"],
                tuple(doc["expect"]),
                tuple(doc.get("partial", ())),
                doc["split"],
                text,
            )
        )
    return entries


def _findings(diagnosis: Any) -> list[tuple[str, str]]:
    """(id, confidence) per finding, in the order doctor ranks them; a matcher without
    confidences (the previous one) is taken as sure of each."""
    return [(m.signature.id, getattr(m, "confidence", "likely")) for m in diagnosis.matches]


def outcome(entry: Entry, diagnosis: Any) -> str:
    """correct: the top finding is the category's signature (or, for a case that is none of
    them, nothing confident is claimed); partial: a half-right top finding, or the right one
    further down; wrong: a confident top finding of another failure; none: no (confident) finding."""
    found = _findings(diagnosis)
    if not entry.expect:
        return "wrong" if any(conf == "likely" for _, conf in found) else "correct"
    if not found:
        return "none"
    top, conf = found[0]
    if top in entry.expect:
        return "correct"
    if top in entry.partial or any(i in entry.expect for i, _ in found):
        return "partial"
    return "wrong" if conf == "likely" else "none"


def score(entries: Iterable[Entry], diagnose: Callable[[list[str]], Any]) -> dict[str, list[str]]:
    """Entry names per outcome."""
    result: dict[str, list[str]] = {k: [] for k in OUTCOMES}
    for e in entries:
        result[outcome(e, diagnose(e.lines))].append(e.name)
    return result


def summary(result: dict[str, list[str]]) -> dict[str, float]:
    n = sum(len(v) for v in result.values())
    diagnosed = len(result["correct"]) + len(result["partial"])
    claimed = diagnosed + len(result["wrong"])
    return {
        "n": n,
        **{k: len(v) for k, v in result.items()},
        "coverage": diagnosed / n if n else 0.0,
        "precision": diagnosed / claimed if claimed else 1.0,
    }
