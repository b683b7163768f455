"""``doctor RUN_DIR``: a run directory read whole, not one log (issue 37, req. 2 and 3).

A run directory of ``patchctl train`` or ``validate`` holds, where the run produced them:

- ``train.log``, the trainer's log, and ``report.json`` / ``validate.json``, the reports;
- ``stacks/``: ``py-spy dump`` of each of the trainer's processes, taken by patchctl before it
  stopped a run that timed out (``rank-R-pid-P.txt``), or ``ray stack`` output saved there;
- ``nccl_trace/``: PyTorch's NCCL flight recorder dumps, one per rank (patchctl sets
  ``TORCH_NCCL_TRACE_BUFFER_SIZE`` and asks each rank for its dump before stopping the run);
- ``ray-status.txt``: ``ray status`` output, whose pending demands say what a stuck job waits for;
- ``hosts/HOST/``: what each host left: its Ray logs, ``pip-freeze.txt``, ``nvidia-smi.txt``,
  ``gpus.csv``, ``dmesg.txt`` (see :mod:`patchctl.doctor.nodes`).

The run *stopped making progress* when the time from its last step to its end is more than
:data:`STALL` times its median step time (or it timed out before a first step). Then doctor says
where each rank was waiting: the py-spy stacks, the flight recorder's last collective per rank, or
``ray status``'s pending demands, and names the rank the others wait for.
"""

from __future__ import annotations

import itertools
import json
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchctl.doctor import flight as recorder
from patchctl.doctor import nodes
from patchctl.doctor import stacks as dumps
from patchctl.doctor.logfile import NotALog, open_log
from patchctl.doctor.matcher import Diagnosis, diagnose
from patchctl.doctor.signatures import Signature
from patchctl.errors import LogUnreadable

#: a run whose last step came this many median step times before its end had stopped progressing
STALL = 5.0
TRAIN_LOG = "train.log"
STACKS = "stacks"
FLIGHT = "nccl_trace"
RAY_STATUS = ("ray-status.txt", "ray_status.txt")
#: a host's files read as logs for signatures
LOG_SUFFIXES = (".log", ".out", ".err")
#: at most this many host log files are diagnosed (a Ray session directory holds hundreds)
MAX_LOGS = 200
#: the sections of ``ray status`` that name what waits: "Pending Demands:" (Ray 2.52; "Demands:" before),
#: "Pending:" nodes and "Recent failures:"
_SECTION = re.compile(r"^(Pending Demands|Demands|Pending|Recent failures):$")


@dataclass(frozen=True)
class Progress:
    steps: int
    last_step: int | None
    #: seconds since launch of the last step, and of the run's end
    last_at: float | None
    ended_at: float | None
    median_step_s: float | None
    timed_out: bool
    stalled: bool

    def text(self) -> str:
        if not self.stalled:
            return ""
        if self.last_at is None:
            return "the run timed out before its first step"
        idle = (self.ended_at or 0.0) - self.last_at
        times = (
            f" ({idle / self.median_step_s:.0f}x the median step time, {self.median_step_s:.3g} s)"
            if (self.median_step_s)
            else ""
        )
        return (
            f"no step for {idle:.0f} s after step {self.last_step} (at {self.last_at:.0f} s) until the run "
            f"{'timed out' if self.timed_out else 'ended'} at {self.ended_at:.0f} s{times}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "last_step": self.last_step,
            "last_at": self.last_at,
            "ended_at": self.ended_at,
            "median_step_s": self.median_step_s,
            "timed_out": self.timed_out,
            "stalled": self.stalled,
            "text": self.text(),
        }


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def progress(report: dict[str, Any]) -> Progress:
    """Whether the run stopped making progress, from report.json's step times and end."""
    steps = [s for s in report.get("steps") or [] if isinstance(s, dict)]
    times = [t for s in steps if (t := _num(s.get("at"))) is not None]
    timings = report.get("timings") if isinstance(report.get("timings"), dict) else {}
    assert isinstance(timings, dict)
    ended = _num(timings.get("trainer_exited")) or _num(timings.get("verdict"))
    timed_out = report.get("timed_out") is True
    gaps = [b - a for a, b in itertools.pairwise(times) if b >= a]
    median = statistics.median(gaps) if gaps else None
    last = times[-1] if times else None
    if last is None:
        stalled = timed_out
    else:
        stalled = ended is not None and median is not None and median > 0 and ended - last > STALL * median
        stalled = stalled or (timed_out and median is None)
    last_step = steps[-1].get("step") if steps else None
    return Progress(
        len(steps), last_step if isinstance(last_step, int) else None, last, ended, median, timed_out, stalled
    )


@dataclass
class Hang:
    """Where each rank waited, from whichever evidence the run directory has."""

    stacks: list[dumps.Stack] = field(default_factory=list)
    odd: dumps.Odd | None = None
    flight: recorder.Verdict | None = None
    ray_pending: list[str] = field(default_factory=list)
    #: what was looked for and not found, so the reader knows what to enable next time
    missing: list[str] = field(default_factory=list)

    def culprit_ranks(self) -> tuple[str, ...]:
        """Who the others wait for: "rank 1" (or "pid 812" for a process without a rank); () when none."""
        if self.flight is not None and self.flight.behind:
            return tuple(f"rank {r}" for r in self.flight.behind)
        if self.odd is not None:
            s = self.odd.stack
            return (f"rank {s.rank}" if s.rank is not None else f"pid {s.pid}",)
        return ()

    def culprit(self) -> str:
        """The rank the others wait for, in one sentence ("" when the evidence names none)."""
        if self.flight is not None and self.flight.behind:
            ranks = ", ".join(map(str, self.flight.behind))
            who = ", ".join(r.who for r in self.flight.ranks if r.rank in self.flight.behind)
            return (
                f"{who} is behind: the others wait in {self.flight.waiting}, which rank {ranks} never "
                "entered (flight recorder)"
            )
        if self.odd is not None:
            at = self.odd.stack.waiting_at()
            where = " > ".join(self.odd.majority)
            return (
                f"{self.odd.stack.who} is in {at} while the other {self.odd.others} wait in {where}: "
                f"it is the one they wait for (py-spy)"
            )
        return ""

    def to_json(self) -> dict[str, Any]:
        return {
            "culprit": self.culprit(),
            "stacks": [
                {
                    "who": s.who,
                    "source": s.source,
                    "rank": s.rank,
                    "pid": s.pid,
                    "waiting_at": str(s.waiting_at() or ""),
                    "frames": [str(f) for f in (s.main().frames if s.main() else [])[:12]],  # type: ignore[union-attr]
                }
                for s in self.stacks
            ],
            "flight_recorder": None
            if self.flight is None
            else {
                "behind": list(self.flight.behind),
                "waiting": self.flight.waiting,
                "ranks": [
                    {"rank": r.rank, "host": r.host, "last": r.last_seq, "op": r.op, "state": r.state, "where": r.where}
                    for r in self.flight.ranks
                ],
                "unreadable": [{"file": f, "why": w} for f, w in self.flight.unreadable],
            },
            "ray_pending": self.ray_pending,
            "missing": self.missing,
        }


def ray_pending(text: str) -> list[str]:
    """The lines of ``ray status``'s Pending/Demands sections that name something waiting."""
    out: list[str] = []
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if m := _SECTION.match(line):
            section = m.group(1)
        elif not line or line.endswith(":") or line.startswith(("---", "===")):
            section = ""  # a blank line or another section's title ends the one read
        elif section and not line.startswith("(no "):
            out.append(f"{section.lower()}: {line[:300]}")
    return out[:20]


def _host_folders(run_dir: Path, name: str) -> list[tuple[Path, str]]:
    """(``hosts/HOST/name``, HOST) of every host folder that has one; none through a link."""
    return [
        (f, f.parent.name)
        for f in sorted((run_dir / nodes.HOSTS).glob(f"*/{name}"))
        if f.is_dir() and not f.is_symlink() and not f.parent.is_symlink()
    ]


def hang(run_dir: Path) -> Hang:
    h = Hang()
    # the head's own (train's dumps of the trainer), then each host's (validate's dumps of its Ray workers)
    for folder, host in [(run_dir / STACKS, ""), *_host_folders(run_dir, STACKS)]:
        if folder.is_dir() and not folder.is_symlink():
            h.stacks += dumps.read_dir(folder, host=host)
    h.odd = dumps.odd_one(h.stacks)
    if not h.stacks:
        h.missing.append(
            f"no py-spy dumps ({STACKS}/): patchctl takes them before it stops a run that timed out, "
            "where py-spy is installed (pip install py-spy)"
        )
    # each host's dumps (validate brings them from where its ranks wrote them) first, so that a rank is
    # named with its host; then the head's own folder (train's, or the head's fetched by validate)
    h.flight = recorder.read_dirs(
        [*_host_folders(run_dir, FLIGHT), (run_dir / FLIGHT, "")],
    )
    if h.flight is None:
        h.missing.append(
            f"no NCCL flight recorder dumps ({FLIGHT}/): run with TORCH_NCCL_TRACE_BUFFER_SIZE=2000 and "
            f"TORCH_NCCL_DEBUG_INFO_TEMP_FILE=RUN_DIR/{FLIGHT}/rank_ (patchctl train sets both)"
        )
    for name in RAY_STATUS:
        if (run_dir / name).is_file():
            h.ray_pending = ray_pending((run_dir / name).read_text(encoding="utf-8", errors="replace"))
            break
    else:
        h.missing.append(f"no {RAY_STATUS[0]} (ray status > {RAY_STATUS[0]} on the head while the run hangs)")
    return h


@dataclass
class RunDir:
    path: Path
    report: Path | None
    report_doc: dict[str, Any] | None
    logs: list[Diagnosis]
    progress: Progress | None
    hang: Hang | None
    nodes: list[nodes.NodeFinding]
    #: files that could not be read as logs: (file, why)
    skipped: list[tuple[str, str]]


def _logs(run_dir: Path) -> list[Path]:
    found = [run_dir / TRAIN_LOG] if (run_dir / TRAIN_LOG).is_file() else []
    hosts = run_dir / nodes.HOSTS
    if hosts.is_dir():
        found += [
            p
            for p in sorted(hosts.rglob("*"))
            if p.suffix in LOG_SUFFIXES and p.is_file() and not p.is_symlink() and STACKS not in p.parts
        ][:MAX_LOGS]
    return found


def read(run_dir: Path, signatures: list[Signature]) -> RunDir:
    """Everything doctor can say from the run directory; a one-line error when it holds nothing to read."""
    report = run_dir / "report.json"
    doc: dict[str, Any] | None = None
    if report.is_file():
        try:
            loaded = json.loads(report.read_text(encoding="utf-8"))
            doc = loaded if isinstance(loaded, dict) else None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            doc = None
    logs = _logs(run_dir)
    known = [report.is_file(), bool(logs), (run_dir / STACKS).is_dir(), (run_dir / FLIGHT).is_dir()]
    known += [(run_dir / n).is_file() for n in (*RAY_STATUS, "validate.json")]
    if not any(known):
        raise LogUnreadable(
            run_dir,
            "no report.json in this directory (nor train.log, stacks/, nccl_trace/, hosts/ or validate.json)",
            "pass the run directory that patchctl train or validate wrote, or the run's log file",
        )
    diagnoses: list[Diagnosis] = []
    skipped: list[tuple[str, str]] = []
    trainer_lines: list[str] = []
    for path in logs:
        try:
            with open_log(path) as reader:
                if path.name == TRAIN_LOG and path.parent == run_dir:
                    keep: list[str] = []

                    def lines(r: Any = reader, keep: list[str] = keep) -> Any:
                        for line in r:
                            if "NCCL INFO" in line:
                                keep.append(line)
                            yield line

                    d = diagnose(lines(), signatures, str(path.relative_to(run_dir)))
                    trainer_lines = keep
                else:
                    d = diagnose(reader, signatures, str(path.relative_to(run_dir)))
        except (NotALog, LogUnreadable, OSError) as exc:
            skipped.append((str(path.relative_to(run_dir)), str(exc)))
            continue
        diagnoses.append(d)
    prog = progress(doc) if doc is not None else None
    validate_doc = _json(run_dir / "validate.json")
    timed_out = bool(validate_doc and "timed out" in str(validate_doc.get("cause", "")))
    stalled = (prog is not None and prog.stalled) or (prog is None and timed_out)
    # every train run has a nccl_trace/ folder: only one with dumps in it is evidence
    evidence = any(_has_files(run_dir / d) for d in (STACKS, FLIGHT))
    evidence = evidence or any(_has_files(f) for f, _ in _host_folders(run_dir, FLIGHT))
    evidence = evidence or any((run_dir / n).is_file() for n in RAY_STATUS)
    h = hang(run_dir) if stalled or evidence else None
    found = nodes.compare(nodes.read_run(run_dir, trainer_lines))
    return RunDir(run_dir, report if doc is not None else None, doc, diagnoses, prog, h, found, skipped)


def _has_files(folder: Path) -> bool:
    return folder.is_dir() and not folder.is_symlink() and any(p.is_file() for p in folder.iterdir())


def _json(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return doc if isinstance(doc, dict) else None
