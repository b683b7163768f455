"""The report step of ``patchctl train``: ``report.json`` and ``report.png`` (reward and loss per
step) beside the log, and :class:`TrainReport`, the command's result."""

from __future__ import annotations

import io
import json
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from patchctl import fsutil
from patchctl.train.facts import Facts
from patchctl.train.gates import Gate
from patchctl.train.logparse import LOSS_KEYS, REWARD_KEYS, LogScan
from patchctl.train.margins import margins
from patchctl.train.model import DoctorFailed, Finding, Judgement, Plan, Ran, Timings

FORMAT = 1
#: what report.json says in place of the plot's path
NO_PLOT = "none (no steps logged, or matplotlib is not installed)"


@dataclass(frozen=True)
class TrainReport:
    """What ``patchctl train`` returns: each step's output, the machine's facts and the files written."""

    plan: Plan
    ran: Ran
    judgement: Judgement
    facts: Facts
    #: :attr:`Ran.timings` with the moment of the verdict
    timings: Timings
    #: report.json, as written
    report: Path
    #: report.png, or None when no steps were logged or matplotlib is missing
    plot: Path | None

    @property
    def passed(self) -> bool:
        return self.judgement.passed

    @property
    def gates(self) -> tuple[Gate, ...]:
        return self.judgement.gates

    @property
    def doctor(self) -> tuple[Finding | DoctorFailed, ...] | None:
        return self.judgement.doctor

    @property
    def returncode(self) -> int | None:
        return self.ran.finished.returncode

    @property
    def run_dir(self) -> Path:
        return self.plan.run_dir

    @property
    def log(self) -> Path:
        return self.plan.launch.log

    def to_json(self) -> dict[str, Any]:
        """The document report.json holds (before nan/inf become null), key for key."""
        p, done = self.plan, self.ran.finished
        run = {
            "profile": p.profile.name,
            "rollout": p.profile.rollout,
            "command": list(p.launch.argv),
            "ray_head": {"command": list(p.head.argv), "log": str(p.head.log)} if p.head else None,
            "cwd": str(p.launch.cwd),
            "env": p.launch.env,
            "returncode": done.returncode,
            "timed_out": done.timed_out,
            "log": str(p.launch.log),
            "adapted": [asdict(a) for a in p.adapted],
            "settings": p.settings(),
            "plot": str(self.plot) if self.plot else NO_PLOT,
        }
        doctor = None if self.doctor is None else [f.to_json() for f in self.doctor]
        proof = self.judgement.proof
        return {
            **document(
                run=run,
                tree=self.facts.tree,
                versions=self.facts.packages,
                gpus=list(self.facts.gpus),
                timings=self.timings,
                scan=self.ran.scan,
                gates=list(self.gates),
                passed=self.passed,
                doctor=doctor,
            ),
            "patched_code": proof.to_json() if proof else None,
            "margins": margins(self.ran.scan, p.profile.gates, self.timings.first_step),
        }


def write(plan: Plan, ran: Ran, judgement: Judgement, facts: Facts, t0: float) -> TrainReport:
    """Plot the run, then write report.json with the verdict's moment (``t0`` as in :mod:`.run`)."""
    # the tree's verl version as the report records it
    title = f"patchctl train --profile {plan.profile.name} (verl {facts.tree.get('version') or '?'})"
    png = plot(plan.run_dir / "report.png", ran.scan, title)
    timings = replace(ran.timings, verdict=round(time.monotonic() - t0, 2))
    done = TrainReport(plan, ran, judgement, facts, timings, plan.run_dir / "report.json", png)
    write_json(done.report, done.to_json())
    return done


def document(
    *,
    run: dict[str, Any],
    tree: dict[str, Any],
    versions: dict[str, str],
    gpus: list[dict[str, str]],
    timings: Timings,
    scan: LogScan,
    gates: list[Gate],
    passed: bool,
    doctor: list[Any] | None,
) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "verdict": "pass" if passed else "fail",
        **run,
        "tree": tree,
        "packages": versions,
        "gpus": gpus,
        "timings": {k: (round(v, 2) if isinstance(v, float) else v) for k, v in asdict(timings).items()},
        "breakdown": timings.breakdown(),
        "total_steps": scan.total_steps,
        "steps": [
            {"step": s.step, "at": round(s.at, 2) if s.at is not None else None, "metrics": s.metrics}
            for s in scan.steps
        ],
        "gates": [{**asdict(g), "status": g.status.value} for g in gates],
        "doctor": doctor,
    }


def write_json(path: Path, doc: dict[str, Any]) -> Path:
    # nan/inf are written as null: JSON has no spelling for them and the gate already names them
    text = json.dumps(_finite(doc), indent=2, allow_nan=False) + "\n"
    return fsutil.write_into(path.parent, path.name, text.encode())


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def warm() -> None:
    """Import matplotlib ahead (on a thread while the trainer runs): the plot then costs no import."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot
    except ImportError:
        pass


def plot(path: Path, scan: LogScan, title: str) -> Path | None:
    """Reward and loss per step as a PNG (matplotlib's Agg backend: no display needed).

    None when nothing was logged or matplotlib is missing: the plot is a convenience, the JSON
    report holds the same numbers.
    """
    reward, loss = scan.series(REWARD_KEYS), scan.series(LOSS_KEYS)
    if not reward and not loss:
        return None
    try:
        import matplotlib
    except ImportError:
        return None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5.5), sharex=True)
    for ax, series, label, colour in (
        (top, reward, "reward (critic/score/mean)", "tab:green"),
        (bottom, loss, "policy loss (actor/pg_loss)", "tab:red"),
    ):
        if series:
            ax.plot([s for s, _ in series], [v for _, v in series], marker="o", markersize=3, color=colour)
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    bottom.set_xlabel("training step")
    top.set_title(title)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110)
    plt.close(fig)
    return fsutil.write_into(path.parent, path.name, png.getvalue())  # swapped in whole, through no link
