"""``--baseline OLD``: the verdict of a run against a reference, per step and per metric.

OLD is a ``report.json`` (or its run folder) from the old cluster or an earlier healthy run, or a
folder of several such runs. The new run is judged step by step on the metrics a migration must
keep: reward, losses, grad norm, entropy, the rollout/trainer agreement metrics and the response
length (:data:`METRICS`, those both reports logged).

* ``same``: every value equal to the (first) reference's, bit for bit;
* ``within band``: every value inside the band the references span at that step, widened by
  :data:`MARGIN` times their spread on each side (the band needs two references at least; eight
  healthy runs are what it was meant for, since after step 3 one run's spread is 60-300% of the
  value: docs/validation/vllm-smoke);
* ``differs``: the first metric and step where the run left the band (with one reference, where
  it first differs at all).

``--compare`` keeps the side-by-side view; this gives the verdict. Pure, apart from reading.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchctl.validate import compare as comparing
from patchctl.validate.errors import ReportUnreadable

#: the metrics judged, by key (those of verl's console logger that both runs logged)
METRICS = (
    "critic/score/mean",
    "critic/rewards/mean",
    "actor/pg_loss",
    "actor/loss",
    "actor/grad_norm",
    "actor/entropy",
    "actor/ppo_kl",
    "training/rollout_actor_probs_pearson_corr",
    "training/rollout_probs_diff_mean",
    "training/rollout_probs_diff_max",
    "rollout_corr/kl",
    "rollout_corr/log_ppl_abs_diff",
    "response_length/mean",
)
#: each side of a band is widened by this many times the references' spread at that step
MARGIN = 0.5


@dataclass(frozen=True)
class Verdict:
    verdict: str
    #: where it left the band ("" unless ``differs``)
    metric: str = ""
    step: int | None = None
    value: float | None = None
    band: tuple[float, float] | None = None
    references: int = 0
    compared: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "metric": self.metric or None,
            "step": self.step,
            "value": self.value,
            "band": list(self.band) if self.band else None,
            "references": self.references,
            "values_compared": self.compared,
            "margin": MARGIN,
        }

    def line(self) -> str:
        if self.verdict != "differs":
            return f"{self.verdict}: {self.compared} values of {self.references} reference run(s)"
        lo, hi = self.band or (math.nan, math.nan)
        value = math.nan if self.value is None else self.value
        # past 6 digits, trailing zeros kept: 3.666193 against 3.666190, not 3.66619
        form = f".{digits}g" if (digits := distinct_digits(value, lo, hi)) == 6 else f"#.{digits}g"
        where = f"[{lo:{form}}, {hi:{form}}]" if self.references > 1 else f"{lo:{form}} (the reference's)"
        return f"differs: {self.metric} at step {self.step} is {value:{form}}, outside {where}"


def distinct_digits(value: float, *edges: float) -> int:
    """The fewest significant digits (6 or more) that print ``value`` apart from each band edge it is
    not equal to: bitwise reruns make one-value bands, and a run off by the last bits (another
    attention kernel, H200 2026-11-29) printed as "3.66619, outside [3.66619, 3.66619]" at 6."""
    for digits in range(6, 18):
        if all(f"{value:.{digits}g}" != f"{e:.{digits}g}" for e in edges if e != value):
            return digits
    return 17


def references(path: Path) -> list[comparing.Report]:
    """OLD as reports: a report or run folder, else every run folder or report.json inside it."""
    if path.is_file() or (path / "report.json").is_file():
        return [comparing.load(path)]
    found = sorted(p for p in path.glob("*/report.json")) + sorted(path.glob("*report.json"))
    if not found:
        raise ReportUnreadable(str(path), "no report.json in it or in its run folders")
    return [comparing.load(p) for p in found]


def _values(r: comparing.Report) -> dict[tuple[int, str], float]:
    out = {}
    for s in r.doc["steps"]:
        for k in METRICS:
            v = (s.get("metrics") or {}).get(k)
            if isinstance(v, (int, float)) and math.isfinite(v):
                out[(int(s["step"]), k)] = float(v)
    return out


def judge(new: comparing.Report, refs: list[comparing.Report]) -> Verdict:
    """Each (step, metric) of the new run is judged against the references that logged it: a
    reference that stopped early (a run killed at step 8) still counts where it has values, and
    does not shrink the comparison of every other step to its own few."""
    mine = _values(new)
    theirs = [_values(r) for r in refs]
    keys = sorted(k for k in mine if any(k in t for t in theirs))
    if not keys:
        return Verdict("differs", "no metric in common", None, None, None, len(refs), 0)
    if all(mine[k] == next(t[k] for t in theirs if k in t) for k in keys):
        return Verdict("same", references=len(refs), compared=len(keys))
    for k in keys:  # in step order, then metric: the first place the run left the band
        vals = [t[k] for t in theirs if k in t]
        lo, hi = min(vals), max(vals)
        pad = MARGIN * (hi - lo)
        if len(vals) == 1 or not (lo - pad <= mine[k] <= hi + pad):
            if len(vals) == 1 and mine[k] == lo:
                continue
            return Verdict("differs", k[1], k[0], mine[k], (lo - pad, hi + pad), len(refs), len(keys))
    return Verdict("within band", references=len(refs), compared=len(keys))
