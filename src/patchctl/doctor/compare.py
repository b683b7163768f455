"""A failed run compared with a healthy one: what only the failed run has (issue 37, requirement 5).

The signatures name known failures; an unknown one is found by difference. Two runs of the same
job print the same lines apart from what changes every run (timestamps, pids, addresses, ids,
numbers), so each line is reduced to a *template* with those replaced by ``#``, and the lines whose
template the healthy log never printed are the failed run's own, warnings listed first. Each is
placed in its run *phase* (startup, Ray, workers, training, validation, teardown: found from
well-known markers) with the seconds since that phase began, so the two runs are aligned by
phase rather than by wall-clock time, which differs by minutes between runs.

Settings (hydra ``key=value`` overrides and ``name=value`` flags in the log, or a report.json's
command and settings) and package versions (:mod:`patchctl.doctor.versions`) are compared as well;
two report.json files also get their key metrics side by side. Every pattern here searches a line
in time linear in its length (tests/doctor/test_linear.py runs them too).
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from patchctl.doctor.logfile import open_log
from patchctl.doctor.metrics import ENTROPY, GRAD_NORM, PROBS_DIFF, REWARD, load_report
from patchctl.doctor.scan import WARNING_LINE
from patchctl.doctor.versions import seen_versions

#: lines (and warnings) listed at most, each; the rest are counted
CAP = 20
#: ANSI colour and cursor sequences (Ray colours its process prefixes)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
#: "2026-11-21 05:57:37,396", "2026-11-21T05:57:37.396Z", "[2026-11-21 05:57:37]"
ISO_TIME = re.compile(r"(?<!\d)(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?")
#: glog's "I1121 05:57:37.396123" (Ray, NCCL, gRPC): no year, month and day in the prefix
GLOG_TIME = re.compile(r"(?<![\w])[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?")
#: vLLM's "INFO 11-24 10:37:12": month and day, no year
VLLM_TIME = re.compile(r"(?<![\w-])(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?!\d)")
#: vLLM's engine banner "Initializing a V1 LLM engine (v0.24.0)", which VERSION does not read
ENGINE_VERSION = re.compile(r"LLM engine \(v(\d+\.\d+(?:\.\d+)?)")
#: a word holding a digit: a number, an id, an address piece (all of its digit runs become "#")
WORD = re.compile(r"\w+")
#: a number, signed, decimal or in e-notation ("-1.2e-05" and "0.0001" are the same kind of value)
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")
DIGITS = re.compile(r"\d+")
HEX = frozenset("0123456789abcdefABCDEF")
#: a tqdm progress bar's bar, whose characters change with its percentage
BAR = re.compile(r"\|[^|\n]*\|")
#: an error line besides WARNING_LINE's warnings: the lines a reader looks at first
ERROR_LINE = re.compile(r"Traceback \(most recent call last\)|\b\w*(?:Error|Exception)\b|\bERROR\b|\bFATAL\b")
#: a setting on a log line: a hydra override "a.b.c=VALUE" (with + or ~) or a flag "use_x=VALUE";
#: the look-behind makes a key start only at a word's start, so the search is linear
SETTING = re.compile(
    r"(?<![\w.+~/-])([+~]{0,2}[A-Za-z_]\w*(?:\.\w+)+|[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)"
    r"""=('[^'\n]*'|"[^"\n]*"|[^\s,'"()\[\]{}]*)"""
)
#: keys whose value is new every run: never a setting that differs
VOLATILE_KEY = re.compile(r"(?:^|[._])(?:pid|port|ip|address|addr|dir|path|files?|host|hostname|node_id|id|time)$")
#: run phases in the order a healthy run passes them, each with the markers that start it
PHASES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ray", re.compile(r"Connected to Ray cluster|Started a local Ray instance|Ray runtime started|ray start")),
    ("workers", re.compile(r"\((?:WorkerDict|ActorRolloutRefWorker|\w*Worker) pid=")),
    ("training", re.compile(r"(?<!\w)step:\d+ - ")),
    ("validation", re.compile(r"Initial validation metrics|validation generation|(?<!\w)val-core/")),
    (
        "teardown",
        re.compile(r"Final validation metrics|Training Progress: 100%|ray\.shutdown|Shutting down|trainer exited"),
    ),
)
#: the phase a log is in before any marker
START = "startup"
#: report.json metrics shown side by side: (label, keys tried in order)
KEY_METRICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("reward", REWARD),
    ("entropy", (ENTROPY,)),
    ("grad norm", (GRAD_NORM,)),
    ("rollout/actor probs diff", (PROBS_DIFF,)),
    ("response length", ("response_length/mean",)),
    ("step time (s)", ("timing_s/step",)),
)


def template(line: str) -> str:
    """``line`` with what changes from run to run replaced by "#": a number whole (e-notation or
    not), every digit run of a word that holds a digit (times, pids, ports, counters), a hex word
    (ids, addresses) whole, a progress bar's bar, a setting's value.
    Two runs' line for the same event get the same template."""
    line = " ".join(ANSI.sub("", line).split())  # tqdm pads its percentage: "  8%" and " 45%"
    line = BAR.sub("|#|", line)
    line = SETTING.sub(r"\1=#", line)  # a changed setting is named as one, not as a new line
    line = NUMBER.sub("#", line)
    return WORD.sub(_word, line)


def _word(m: re.Match[str]) -> str:
    w = m.group()
    if not any(c.isdigit() for c in w):
        return w
    if (len(w) >= 6 and all(c in HEX for c in w)) or w.startswith(("0x", "0X")):
        return "#"
    return DIGITS.sub("#", w)


def timestamp(line: str, year: int) -> tuple[float, int] | None:
    """(seconds since the epoch, year) of the time in ``line``'s first 64 characters, or None. A
    glog time has no year: it is taken as ``year``, the year of the log's last full date."""
    if m := ISO_TIME.search(line, 0, 64):
        y, mo, d, h, mi, s, frac = m.groups()
    elif m := GLOG_TIME.search(line, 0, 64):
        y, (mo, d, h, mi, s, frac) = str(year), m.groups()
    elif m := VLLM_TIME.search(line, 0, 96):
        y, (mo, d, h, mi, s), frac = str(year), m.groups(), None
    else:
        return None
    try:
        t = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s))
    except ValueError:
        return None
    return t.timestamp() + (int(frac) / 10 ** len(frac) if frac else 0.0), t.year


@dataclass
class Line:
    """The first line of one template: where and when it was, and how often the template occurred."""

    number: int
    text: str
    phase: str
    #: seconds since its phase began, when the log has timestamps
    offset: float | None
    warning: bool
    count: int = 1

    def where(self) -> str:
        return f"{self.phase} +{self.offset:.0f}s" if self.offset is not None else self.phase

    def to_json(self) -> dict[str, object]:
        return {
            "line": self.number,
            "text": self.text,
            "phase": self.phase,
            "seconds_into_phase": None if self.offset is None else round(self.offset, 3),
            "warning": self.warning,
            "count": self.count,
        }


@dataclass
class Run:
    """What a comparison needs of one run: its line templates (from a log), phases, settings,
    package versions and per-step metrics (from a report)."""

    source: str
    lines: dict[str, Line] = field(default_factory=dict)
    #: phases in the order entered, each once
    phases: list[str] = field(default_factory=list)
    settings: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    steps: list[tuple[int, dict[str, Any]]] | None = None


ORDER = [START, *(name for name, _ in PHASES)]


def _enters(current: str, marker: str) -> bool:
    """Whether a marker of phase ``marker`` starts it while the log is in ``current``: phases only
    go forward (a worker's line during training is still training), except that training resumes
    after a validation in the middle of the run."""
    return ORDER.index(marker) > ORDER.index(current) or (marker == "training" and current == "validation")


def read_log(lines: Iterable[str], source: str) -> Run:
    """One pass over a log: each template's first line, its phase and offset; settings; versions."""
    run = Run(source)
    phase, started, now, year = START, None, None, 2000
    run.phases.append(START)
    seen: dict[str, list[str]] = {}
    for n, raw in enumerate(lines, 1):
        line = ANSI.sub("", raw).rstrip("\n")
        if (stamp := timestamp(line, year)) is not None:
            now, year = stamp
        for name, marker in PHASES:
            if _enters(phase, name) and marker.search(line):
                # the phase starts at its marker's time, or the last time before it
                phase, started = name, now
                if name not in run.phases:
                    run.phases.append(name)
                break
        started = now if started is None else started
        key = template(line)
        if not key:
            continue
        if (first := run.lines.get(key)) is not None:
            first.count += 1
        else:
            offset = now - started if now is not None and started is not None else None
            warning = WARNING_LINE.search(line) is not None or ERROR_LINE.search(line) is not None
            run.lines[key] = Line(n, line.strip(), phase, offset, warning)
        for m in SETTING.finditer(line):
            if not VOLATILE_KEY.search(m.group(1)):
                run.settings.setdefault(m.group(1), m.group(2))
        if any(c.isdigit() for c in line):
            seen_versions(line, seen)
            engine = ENGINE_VERSION.search(line)
            if engine and engine.group(1) not in (vllm := seen.setdefault("vllm", [])):
                vllm.append(engine.group(1))
    run.versions = {p: ", ".join(v) for p, v in seen.items() if v}
    return run


def read_report(path: Path) -> Run:
    """A report.json's settings (its command's overrides and its resolved settings), package and
    verl versions, and steps."""
    report, steps = load_report(path)
    doc = json.loads(report.read_text(encoding="utf-8"))
    run = Run(str(report), steps=steps)
    for arg in doc.get("command") or []:
        if isinstance(arg, str) and (m := SETTING.match(arg)) and not VOLATILE_KEY.search(m.group(1)):
            run.settings[m.group(1)] = arg[m.end(1) + 1 :]
    for name, value in (doc.get("settings") or {}).items():
        v = value.get("value") if isinstance(value, dict) else value
        if not VOLATILE_KEY.search(name.lower()) and isinstance(v, (str, int, float, bool)):
            run.settings[name] = str(v)
    run.versions = {str(k): str(v) for k, v in (doc.get("packages") or {}).items()}
    tree = doc.get("tree") or {}
    if isinstance(tree, dict) and tree.get("version"):
        run.versions.setdefault("verl", str(tree["version"]))
    return run


def read_run(path: Path) -> Run:
    """A run from a log (plain or compressed), a report.json or a run directory holding one."""
    if path.is_dir() or path.suffix == ".json":
        return read_report(path)
    with open_log(path) as reader:
        return read_log(reader, reader.source)


@dataclass
class Comparison:
    failed: str
    healthy: str
    #: lines whose template the healthy run never printed, warnings and errors first, each capped
    warnings: list[Line]
    others: list[Line]
    warnings_total: int
    others_total: int
    #: (phases the failed run reached, phases the healthy run reached)
    phases: tuple[list[str], list[str]]
    #: (key, healthy value, failed value); None where a run has no such key
    settings: list[tuple[str, str | None, str | None]]
    versions: list[tuple[str, str | None, str | None]]
    #: (metric, healthy mean, failed mean, healthy steps, failed steps) when both are reports
    metrics: list[tuple[str, float | None, float | None]]
    steps: tuple[int, int] | None

    @property
    def differs(self) -> bool:
        return bool(self.warnings_total or self.others_total or self.settings or self.versions or self.missing_phases)

    @property
    def missing_phases(self) -> list[str]:
        """The phases the healthy run reached and the failed one did not (where it stopped)."""
        failed, healthy = self.phases
        return [p for p in healthy if p not in failed] if failed else []

    def to_json(self) -> dict[str, object]:
        return {
            "failed": self.failed,
            "healthy": self.healthy,
            "differs": self.differs,
            "phases": {"failed": self.phases[0], "healthy": self.phases[1], "not_reached": self.missing_phases},
            "warnings_only_in_failed": {"total": self.warnings_total, "shown": [w.to_json() for w in self.warnings]},
            "lines_only_in_failed": {"total": self.others_total, "shown": [o.to_json() for o in self.others]},
            "settings": _pairs(self.settings),
            "versions": _pairs(self.versions),
            "metrics": [{"metric": m, "healthy": h, "failed": f} for m, h, f in self.metrics],
            "steps": None if self.steps is None else {"healthy": self.steps[0], "failed": self.steps[1]},
        }


def _pairs(rows: list[tuple[str, str | None, str | None]]) -> list[dict[str, str | None]]:
    return [{"key": k, "healthy": h, "failed": f} for k, h, f in rows]


def _differ(healthy: dict[str, str], failed: dict[str, str], *, both: bool) -> list[tuple[str, str | None, str | None]]:
    """The keys whose values differ; with ``both``, only keys both runs show (a log and a report
    show different sets of keys: one missing from the other is no difference)."""
    keys = [*healthy, *(k for k in failed if k not in healthy)]
    if both:
        keys = [k for k in keys if k in healthy and k in failed]
    return [(k, healthy.get(k), failed.get(k)) for k in keys if healthy.get(k) != failed.get(k)]


def _mean(steps: list[tuple[int, dict[str, Any]]], keys: tuple[str, ...]) -> float | None:
    for key in keys:
        values = [float(m[key]) for _, m in steps if isinstance(m.get(key), (int, float))]
        if values:
            return statistics.fmean(values)
    return None


def compare(failed: Run, healthy: Run, cap: int = CAP) -> Comparison:
    """What ``failed`` has that ``healthy`` does not. Line templates are compared only when both
    runs are logs (a report keeps no lines), metrics only when both are reports; a log compared with a
    report compares only the settings and versions both show."""
    only: list[Line] = []
    if failed.steps is None and healthy.steps is None:
        only = [line for key, line in failed.lines.items() if key not in healthy.lines]
    warnings = [x for x in only if x.warning]
    others = [x for x in only if not x.warning]
    metrics: list[tuple[str, float | None, float | None]] = []
    steps = None
    if failed.steps is not None and healthy.steps is not None:
        steps = (len(healthy.steps), len(failed.steps))
        for label, keys in KEY_METRICS:
            h, f = _mean(healthy.steps, keys), _mean(failed.steps, keys)
            if h is not None or f is not None:
                metrics.append((label, h, f))
    phases = (failed.phases, healthy.phases) if failed.steps is None and healthy.steps is None else ([], [])
    mixed = (failed.steps is None) != (healthy.steps is None)
    return Comparison(
        failed.source,
        healthy.source,
        warnings[:cap],
        others[:cap],
        len(warnings),
        len(others),
        phases,
        _differ(healthy.settings, failed.settings, both=mixed),
        _differ(healthy.versions, failed.versions, both=mixed),
        metrics,
        steps,
    )
