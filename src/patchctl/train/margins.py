"""How far a run stayed from each bar of its gates: the headroom the sabotage suite reports for
healthy runs ("PASS, with no gate near its bar"), and report.json's ``margins``.

Each figure is a ratio that is above 1 when the gate passes and reads as "how many times the bar's
distance": 3.0 means the run could have been three times worse before failing. For the agreement
bars that is measured from perfect agreement (pearson 1, no difference), so a pearson of 0.9999
against a bar of 0.98 is 200; a run that used none of the allowance reads 1e6. A gate the run
logged nothing for has no entry.
"""

from __future__ import annotations

import math
import statistics

from patchctl.train import signals
from patchctl.train.logparse import LogScan
from patchctl.train.profiles import Gates

#: the ratio of a run that used none of a bar's allowance (JSON has no infinity)
CAP = 1e6


def _values(scan: LogScan, metric: str) -> list[float]:
    return [
        s.metrics[metric]
        for s in scan.steps
        if metric in s.metrics and math.isfinite(s.metrics[metric]) and s.metrics.get(signals.DIFF_VALID, 1.0) == 1.0
    ]


def _ratio(allowed: float, used: float) -> float | None:
    if allowed <= 0:
        return None
    return round(min(allowed / used, CAP), 2) if used > 0 else CAP


def margins(scan: LogScan, gates: Gates, first_step_s: float | None) -> dict[str, float | None]:
    """Bar name -> headroom ratio, for each bar of ``gates`` the run logged something for."""
    out: dict[str, float | None] = {}
    if gates.first_step_max_s is not None and first_step_s:
        out["time-to-first-step"] = _ratio(gates.first_step_max_s, first_step_s)
    if gates.learning_metric:
        values = [v for _, v in scan.series((gates.learning_metric,))]
        w = gates.learning_window
        if len(values) >= 2 * w and gates.learning_min_gain > 0:
            gain = statistics.fmean(values[-w:]) - statistics.fmean(values[:w])
            out["learning"] = round(gain / gates.learning_min_gain, 2)
    pearson = _values(scan, signals.PEARSON)
    if gates.agree_pearson_min is not None and pearson:
        out["agree-pearson"] = _ratio(1 - gates.agree_pearson_min, 1 - min(pearson))
    for key, metric, bar in (
        ("agree-probs-diff", signals.PROBS_DIFF, gates.agree_probs_diff_max),
        ("agree-kl", signals.CORR_KL, gates.agree_kl_max),
    ):
        values = [abs(v) for v in _values(scan, metric)]
        if bar is not None and values:
            out[key] = _ratio(bar, max(values))
    kls = [
        abs(s.metrics[signals.PPO_KL])
        for s in scan.steps
        if signals.has_advantage(s) and signals.PPO_KL in s.metrics and math.isfinite(s.metrics[signals.PPO_KL])
    ]
    if gates.update_kl_min and kls:
        out["update-kl"] = round(statistics.median(kls) / gates.update_kl_min, 2)
    return out
