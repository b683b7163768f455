"""The run report: ``report.json`` and ``report.png`` (reward and loss per step) beside the log."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from patchctl import fsutil
from patchctl.train.gates import Gate
from patchctl.train.logparse import LOSS_KEYS, REWARD_KEYS, LogScan

FORMAT = 1


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


def document(*, run: dict[str, Any], tree: dict[str, Any], versions: dict[str, str], gpus: list[dict[str, str]],
             timings: Timings, scan: LogScan, gates: list[Gate], passed: bool,
             doctor: list[Any] | None) -> dict[str, Any]:
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
        "steps": [{"step": s.step, "at": round(s.at, 2) if s.at is not None else None, "metrics": s.metrics}
                  for s in scan.steps],
        "gates": [{**asdict(g), "status": g.status.value} for g in gates],
        "doctor": doctor,
    }


def write_json(path: Path, doc: dict[str, Any]) -> Path:
    # nan/inf are written as null: JSON has no spelling for them and the gate already names them
    text = json.dumps(_finite(doc), indent=2, allow_nan=False) + "\n"
    fsutil.write_all(path.parent, [fsutil.FileChange(path.name, text.encode())])
    return path


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


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
    for ax, series, label, colour in ((top, reward, "reward (critic/score/mean)", "tab:green"),
                                      (bottom, loss, "policy loss (actor/pg_loss)", "tab:red")):
        if series:
            ax.plot([s for s, _ in series], [v for _, v in series], marker="o", markersize=3, color=colour)
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    bottom.set_xlabel("training step")
    top.set_title(title)
    fig.tight_layout()
    tmp = path.with_name(path.name + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)
    return path
