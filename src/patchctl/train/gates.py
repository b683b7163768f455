"""The verdict of a training run: each gate with the value it saw and the bar it applied."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from patchctl.train.logparse import LogScan
from patchctl.train.profiles import Gates


class GateStatus(str, enum.Enum):
    PASS = "pass"  # noqa: S105 - a gate's status, not a password
    FAIL = "fail"
    #: not applicable to this run (no learning check configured, no steps to time)
    SKIP = "skip"


@dataclass(frozen=True)
class Gate:
    name: str
    status: GateStatus
    #: what the run showed, e.g. 0 for the exit code or 31.2 for seconds to the first step
    value: float | int | str | None
    #: the bar, in words, e.g. "== 0" or "<= 60 s"
    threshold: str
    #: a sentence a user can act on
    reason: str


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def evaluate(returncode: int | None, scan: LogScan, gates: Gates, first_step_s: float | None) -> list[Gate]:
    """Every gate of the profile, in a fixed order; none is skipped silently."""
    out = []
    ok = returncode == 0
    out.append(
        Gate(
            "exit-code",
            GateStatus.PASS if ok else GateStatus.FAIL,
            returncode,
            "== 0",
            "the trainer exited cleanly"
            if ok
            else (
                "the trainer was stopped (timeout or interrupt)"
                if returncode is None
                else f"the trainer exited with {returncode}; the log's last lines say why"
            ),
        )
    )

    expected = max(gates.min_steps, scan.total_steps or 0)
    n = len({s.step for s in scan.steps})
    ok = n >= expected
    out.append(
        Gate(
            "steps-logged",
            GateStatus.PASS if ok else GateStatus.FAIL,
            n,
            f">= {expected}",
            f"{n} training steps logged" + ("" if ok else f", expected {expected}"),
        )
    )

    bad = scan.non_finite()
    if not scan.steps:
        out.append(Gate("metrics-finite", GateStatus.FAIL, 0, "all finite", "no metrics were logged"))
    else:
        count = sum(len(s.metrics) for s in scan.steps)
        out.append(
            Gate(
                "metrics-finite",
                GateStatus.FAIL if bad else GateStatus.PASS,
                len(bad),
                "0 non-finite",
                f"step {bad[0][0]}: {bad[0][1]} = {bad[0][2]}" if bad else f"all {count} logged values finite",
            )
        )

    if first_step_s is None:
        out.append(
            Gate(
                "time-to-first-step",
                GateStatus.FAIL,
                None,
                _limit(gates.first_step_max_s),
                "no training step was logged",
            )
        )
    else:
        ok = gates.first_step_max_s is None or first_step_s <= gates.first_step_max_s
        out.append(
            Gate(
                "time-to-first-step",
                GateStatus.PASS if ok else GateStatus.FAIL,
                round(first_step_s, 1),
                _limit(gates.first_step_max_s),
                f"first step {first_step_s:.1f} s after launch",
            )
        )

    if gates.learning_metric:
        out.append(_learning(scan, gates))
    return out


def _limit(seconds: float | None) -> str:
    return f"<= {seconds:g} s" if seconds is not None else "none"


def _learning(scan: LogScan, gates: Gates) -> Gate:
    metric, w = str(gates.learning_metric), gates.learning_window
    values = [v for _, v in scan.series((metric,))]
    bar = f"last {w} - first {w} >= {gates.learning_min_gain:g}"
    if len(values) < 2 * w:
        return Gate(
            "learning", GateStatus.FAIL, None, bar, f"{metric}: {len(values)} steps logged, the check needs {2 * w}"
        )
    first, last = _mean(values[:w]), _mean(values[-w:])
    gain = last - first
    ok = gain >= gates.learning_min_gain
    return Gate(
        "learning",
        GateStatus.PASS if ok else GateStatus.FAIL,
        round(gain, 4),
        bar,
        f"{metric} mean {first:.3f} over the first {w} steps -> {last:.3f} over the last {w}"
        + ("" if ok else "; the policy did not learn: check the reward, lr and rollout"),
    )


def verdict(gates: list[Gate]) -> bool:
    return all(g.status is not GateStatus.FAIL for g in gates)
