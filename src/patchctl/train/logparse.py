"""Reading verl's console log: per-step metrics and the moments a run passes through.

verl's console logger prints one line per training step, ``step:N - key:value - ...``, each
value formatted with ``pprint`` (so numpy 2 scalars read ``np.float64(0.5)``), and Ray prefixes
lines of remote actors with ``(TaskRunner pid=123)``. :class:`LogScan` is fed line by line with
the seconds since launch, so the same code serves the live progress line and a saved log.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_STEP = re.compile(r"(?:^|[\s)])step:(\d+) - (.+)$")
_NUMPY = re.compile(r"^np\.(?:float|int|uint|bool_?)\w*\((.*)\)$")
_TOTAL = re.compile(r"Total training steps: (\d+)")

#: moment name -> pattern of the first line that marks it, in the order a run reaches them
MARKERS: dict[str, re.Pattern[str]] = {
    "ray_start": re.compile(r"Started a local Ray instance|Connected to Ray cluster"),
    "task_runner": re.compile(r"TaskRunner hostname"),
    "workers_ready": re.compile(r"Training from scratch|Load from checkpoint folder|Training Progress"),
}
#: metrics a progress line shows, first match wins
REWARD_KEYS = ("critic/score/mean", "critic/rewards/mean")
LOSS_KEYS = ("actor/pg_loss", "actor/loss")


def parse_value(text: str) -> float | None:
    """A logged value as a float (nan and inf included), None when it is not a number."""
    text = text.strip()
    m = _NUMPY.match(text)
    if m:
        text = m.group(1).strip()
    if text in ("True", "False"):
        return float(text == "True")
    try:
        return float(text)
    except ValueError:
        return None


def parse_step(line: str) -> tuple[int, dict[str, float]] | None:
    """``(step, metrics)`` for a console-logger line, else None."""
    m = _STEP.search(_ANSI.sub("", line).rstrip("\r\n"))
    if not m:
        return None
    metrics: dict[str, float] = {}
    for part in m.group(2).split(" - "):
        key, sep, raw = part.rpartition(":")
        if not sep or not key:
            continue
        value = parse_value(raw)
        if value is not None:
            metrics[key.strip()] = value
    return int(m.group(1)), metrics


def pick(metrics: dict[str, float], keys: tuple[str, ...]) -> float | None:
    return next((metrics[k] for k in keys if k in metrics), None)


@dataclass(frozen=True)
class Step:
    step: int
    #: seconds since launch when the line arrived (None when read from a file without times)
    at: float | None
    metrics: dict[str, float]


@dataclass
class LogScan:
    """Accumulates steps and moments from the lines of one run."""

    steps: list[Step] = field(default_factory=list)
    #: moment name -> seconds since launch
    moments: dict[str, float] = field(default_factory=dict)
    total_steps: int | None = None
    lines: int = 0

    def feed(self, line: str, at: float | None = None) -> Step | None:
        """Take one line; return the step it logged, if any."""
        self.lines += 1
        line = _ANSI.sub("", line)  # Ray colours its "(TaskRunner pid=...)" prefixes
        for name, rx in MARKERS.items():
            if name not in self.moments and rx.search(line):
                self.moments[name] = at if at is not None else float(self.lines)
        if self.total_steps is None:
            m = _TOTAL.search(line)
            if m:
                self.total_steps = int(m.group(1))
        parsed = parse_step(line)
        if parsed is None:
            return None
        step = Step(parsed[0], at, parsed[1])
        # validation-only lines (step:0 - val-core/...) are kept apart from training steps
        if step.step >= 1 and any(not k.startswith("val") for k in step.metrics):
            # a second copy of a step already logged is the same line forwarded twice (Ray's log
            # monitors of two nodes on one machine both relay the driver's output), not a step
            if any(s.step == step.step and s.metrics == step.metrics for s in self.steps[-4:]):
                return None
            self.steps.append(step)
            return step
        return None

    def non_finite(self) -> list[tuple[int, str, float]]:
        return [(s.step, k, v) for s in self.steps for k, v in s.metrics.items() if not math.isfinite(v)]

    def series(self, keys: tuple[str, ...]) -> list[tuple[int, float]]:
        out = []
        for s in self.steps:
            v = pick(s.metrics, keys)
            if v is not None:
                out.append((s.step, v))
        return out


def scan_text(text: str) -> LogScan:
    scan = LogScan()
    for line in text.splitlines():
        scan.feed(line)
    return scan


@dataclass(frozen=True)
class Progress:
    """What the live progress line shows after each logged step (train's and validate's)."""

    step: int
    total: int | None
    reward: float | None
    loss: float | None
    seconds_per_step: float | None
    elapsed: float
