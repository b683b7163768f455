"""What each step of ``patchctl train`` returns: frozen values, so a step's output is its whole effect.

The run is plan → launch → judge → report (:mod:`.run`): :class:`Plan` is what ``--dry-run``
shows, :class:`Ran` what the trainer did, :class:`Judgement` what the gates (and ``doctor``, on a
failure) made of it; :class:`~patchctl.train.report.TrainReport` holds all of them with the
machine's facts, ready for a table or ``to_json()``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from patchctl.train.codeproof import Proof, Watch
from patchctl.train.gates import Gate
from patchctl.train.launcher import Finished, Launch
from patchctl.train.logparse import LogScan
from patchctl.train.profiles import Adapt, Profile
from patchctl.train.rayhead import HeadSpec


@dataclass(frozen=True)
class Plan:
    """The run, decided before anything starts (what ``--dry-run`` shows)."""

    profile: Profile
    run_dir: Path
    launch: Launch
    #: placeholder values the command was filled from
    values: dict[str, str]
    #: the Ray head node patchctl starts beside the trainer, if the profile asks for one
    head: HeadSpec | None = None
    #: the profile's [[adapt]] tables that matched the target's verl version (already applied)
    adapted: tuple[Adapt, ...] = ()
    #: where each path setting came from (cluster, environment, git_ignore.py, patchctl)
    sources: dict[str, str] = field(default_factory=dict)
    #: the code patches whose modules the code hook watches in every process (none: no hook)
    watched: tuple[Watch, ...] = ()

    def settings(self) -> dict[str, dict[str, str]]:
        """Each path setting the run used, with where it came from (for the dry run and the report)."""
        return {k: {"value": self.values[k], "source": src} for k, src in self.sources.items() if k in self.values}

    def to_json(self) -> dict[str, Any]:
        """``--dry-run --json``: the command, its environment and where the run will write."""
        return {
            "profile": self.profile.name,
            "cwd": str(self.launch.cwd),
            "env": self.launch.env,
            "command": list(self.launch.argv),
            "run_dir": str(self.run_dir),
            "ray_head": list(self.head.argv) if self.head else None,
            "adapted": [{"verl": a.verl, "why": a.why} for a in self.adapted],
            "settings": self.settings(),
        }


@dataclass(frozen=True)
class Timings:
    """Seconds since ``patchctl train`` started (its interpreter's start), per moment of the run."""

    #: the smoke assets are built while the trainer starts, so this may come after trainer_started
    assets_ready: float | None = None
    trainer_started: float | None = None
    ray_started: float | None = None
    task_runner: float | None = None
    workers_ready: float | None = None
    first_step: float | None = None
    last_step: float | None = None
    trainer_exited: float | None = None
    verdict: float | None = None

    def breakdown(self) -> dict[str, float | None]:
        """Durations of the phases: where the time to the verdict went."""

        def span(a: float | None, b: float | None) -> float | None:
            return round(b - a, 2) if a is not None and b is not None else None

        return {
            "startup": span(0.0, self.ray_started),
            "ray": span(self.ray_started, self.task_runner),
            "workers": span(self.task_runner, self.workers_ready),
            "first_step": span(self.workers_ready, self.first_step),
            "steps": span(self.first_step, self.last_step),
            "teardown": span(self.last_step, self.trainer_exited),
            "report": span(self.trainer_exited, self.verdict),
        }


@dataclass(frozen=True)
class Ran:
    """The launch step's output: how the trainer ended and what its log showed."""

    finished: Finished
    #: every line the trainer printed, read (fed while it ran; nothing feeds it after the launch)
    scan: LogScan
    #: each moment up to the trainer's exit; the verdict's is added by the report
    timings: Timings


@dataclass(frozen=True)
class Finding:
    """A known failure signature ``patchctl doctor`` found in the trainer's log."""

    id: str
    title: str
    #: 1-based line of the first hit in train.log
    line: int
    excerpt: str
    cause: str
    fix: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DoctorFailed:
    """``doctor`` could not read the log (or its signatures): the report says why instead of findings."""

    error: str

    def to_json(self) -> dict[str, Any]:
        return {"error": self.error}


@dataclass(frozen=True)
class Judgement:
    """The judge step's output: each gate, the verdict, and on a failure what ``doctor`` recognised."""

    gates: tuple[Gate, ...]
    passed: bool
    #: None on a pass (or where doctor is absent); else its findings, possibly none
    doctor: tuple[Finding | DoctorFailed, ...] | None = None
    #: what the code hook recorded (None where the tree has no code patch to watch)
    proof: Proof | None = None
