"""Gates that do not depend on the reward: did the rollout and the trainer agree, did the update
move the policy, and did the moved weights reach the rollout.

A run whose every reward is 0 (the record's DEBUG profile on a random model) has every advantage,
loss and gradient at 0: exit code, step count and finite metrics pass for any tree that runs at
all. These gates read what verl logs besides the reward:

- ``rollout-agrees``: on the steps no applied update preceded (the first one, at least), the
  probabilities the rollout engine sampled with against the trainer's for the same tokens (verl's
  ``training/rollout_probs_diff_mean`` and ``training/rollout_actor_probs_pearson_corr``, logged where
  ``actor_rollout_ref.rollout.calculate_log_probs`` is on, and ``rollout_corr/kl``). Wrong
  kernels, a dtype mismatch or corrupted logits in the rollout show here from the first step.
- ``update-applied``: on steps with a non-zero advantage, the gradient norm is finite and above 0,
  the learning rate above 0, and (with two mini-batches per step) the second mini-batch saw a
  policy the first one moved (``actor/ppo_kl``): a skipped optimizer step or an lr of 0 leaves it 0.
  Where the command takes one optimizer step per training step, ppo_kl is 0 by construction and
  :func:`patchctl.train.minibatch.fit` turns that bar off, saying why.
- ``weights-synced``: the same agreement on the steps that follow an applied update. A rollout
  that never receives the trainer's weights samples from the old policy, so the two diverge once
  the trainer has moved, while the first step still agrees: the two gates tell a broken sync
  (only this one fails) from broken sampling or kernels (both fail). Before any update they agree
  whatever the sync does, which is why a run without an applied update SKIPs this gate.

Where verl logs none of these metrics (the HF rollout, verl < 0.6 without the setting) the gate
says so and SKIPs: it never passes on missing data. Both families need the rollout's log-probs in
the batch, which ``actor_rollout_ref.rollout.calculate_log_probs=True`` asks for (the default from
0.9; false in 0.6-0.7): ``training/rollout_probs_diff_*`` then come from
``verl.utils.debug.metrics.calculate_debug_metrics``, and ``rollout_corr/*`` from the rollout
correction helper, which runs wherever ``algorithm.rollout_correction`` exists (0.6.1 on) outside
its bypass mode. The committed 0.9.1 + vLLM 0.24 reports hold both on every step.
"""

from __future__ import annotations

import math
import statistics

from patchctl.train.gates import Gate, GateStatus
from patchctl.train.logparse import LogScan, Step
from patchctl.train.profiles import Gates

PEARSON = "training/rollout_actor_probs_pearson_corr"
PROBS_DIFF = "training/rollout_probs_diff_mean"
DIFF_VALID = "training/rollout_probs_diff_valid"
CORR_KL = "rollout_corr/kl"
GRAD_NORM, LR, PPO_KL = "actor/grad_norm", "actor/lr", "actor/ppo_kl"
ADV_MAX, ADV_MIN = "critic/advantages/max", "critic/advantages/min"
#: below this an advantage is 0 (GRPO's advantages of a group of equal rewards are exactly 0)
ADV_EPS = 1e-8
NOT_LOGGED = (
    "verl logged no rollout log-probs ({keys}): not available on this version or rollout; where the "
    "config has it, set actor_rollout_ref.rollout.calculate_log_probs=True"
)


def evaluate(scan: LogScan, gates: Gates) -> list[Gate]:
    """The three gates, in a fixed order."""
    applied = _updated_steps(scan, gates)
    before = [s for s in scan.steps if s.step - 1 not in applied]
    return [
        _agreement("rollout-agrees", before, gates, f"the {len(before)} steps no applied update preceded"),
        _update(scan, gates),
        _synced(scan, gates, applied),
    ]


def has_advantage(step: Step) -> bool:
    """A step whose advantages are not all 0: its update was asked to move the policy."""
    m = step.metrics
    return any(abs(m.get(k, 0.0)) > ADV_EPS for k in (ADV_MAX, ADV_MIN))


def _updated_steps(scan: LogScan, gates: Gates) -> set[int]:
    """Steps whose update moved the policy: a non-zero advantage, grad norm and lr above 0, and
    where judged, |ppo_kl| at its bar."""
    out = set()
    for s in scan.steps:
        m = s.metrics
        kl_ok = gates.update_kl_min is None or PPO_KL not in m or abs(m[PPO_KL]) >= gates.update_kl_min
        if has_advantage(s) and m.get(GRAD_NORM, 0.0) > 0 and m.get(LR, 1.0) > 0 and kl_ok:
            out.add(s.step)
    return out


def _bars(gates: Gates) -> list[tuple[str, str, float, bool]]:
    """(metric, words, bar, higher is better) for each configured agreement bar."""
    out = []
    if gates.agree_pearson_min is not None:
        out.append((PEARSON, "pearson", gates.agree_pearson_min, True))
    if gates.agree_probs_diff_max is not None:
        out.append((PROBS_DIFF, "mean |p diff|", gates.agree_probs_diff_max, False))
    if gates.agree_kl_max is not None:
        out.append((CORR_KL, "|kl|", gates.agree_kl_max, False))
    return out


def _agreement(name: str, steps: list[Step], gates: Gates, which: str) -> Gate:
    bars = _bars(gates)
    threshold = ", ".join(f"{w} {'>=' if hi else '<='} {b:g}" for _, w, b, hi in bars) or "none"
    if not bars:
        return Gate(name, GateStatus.SKIP, None, threshold, "the profile sets no agree_* bar in its gates table")
    seen, worst, failed = 0, [], None
    for metric, words, bar, higher in bars:
        values = [
            (s.step, abs(s.metrics[metric]) if not higher else s.metrics[metric])
            for s in steps
            if metric in s.metrics and s.metrics.get(DIFF_VALID, 1.0) == 1.0 and math.isfinite(s.metrics[metric])
        ]
        if not values:
            continue
        seen += 1
        step, value = min(values, key=lambda v: v[1]) if higher else max(values, key=lambda v: v[1])
        worst.append(f"{words} {value:.6g} (step {step})")
        if failed is None and (value < bar if higher else value > bar):
            failed = f"step {step}: {metric} = {value:.6g}, bar {'>=' if higher else '<='} {bar:g}"
    if not seen:
        if not steps:
            return Gate(name, GateStatus.SKIP, None, threshold, f"no step to judge ({which})")
        return Gate(name, GateStatus.SKIP, None, threshold, NOT_LOGGED.format(keys=", ".join(m for m, *_ in bars)))
    summary = "; ".join(worst)
    if failed:
        return Gate(
            name,
            GateStatus.FAIL,
            summary,
            threshold,
            f"{failed}: the rollout sampled from other probabilities than the trainer computes "
            f"({which}); check weight sync, sampling settings, kernels and dtypes",
        )
    return Gate(name, GateStatus.PASS, summary, threshold, f"worst over {which}: {summary}")


def _update(scan: LogScan, gates: Gates) -> Gate:
    name = "update-applied"
    bar = (
        "grad norm > 0, lr > 0"
        + (f", median |ppo_kl| >= {gates.update_kl_min:g}" if gates.update_kl_min is not None else "")
        + " on steps with an advantage"
    )
    if not any(GRAD_NORM in s.metrics for s in scan.steps):
        return Gate(name, GateStatus.SKIP, None, bar, f"verl logged no {GRAD_NORM}")
    for s in scan.steps:
        if not math.isfinite(s.metrics.get(GRAD_NORM, 0.0)):
            return Gate(name, GateStatus.FAIL, s.metrics[GRAD_NORM], bar, f"step {s.step}: {GRAD_NORM} is not finite")
    judged = [s for s in scan.steps if has_advantage(s)]
    if not judged:
        return Gate(
            name,
            GateStatus.SKIP,
            0,
            bar,
            "every advantage was 0 (equal rewards in every group): no step "
            "asked the update to move the policy, so whether it can is not shown",
        )
    for s in judged:
        m = s.metrics
        if m.get(GRAD_NORM, 0.0) <= 0:
            return Gate(
                name,
                GateStatus.FAIL,
                0.0,
                bar,
                f"step {s.step}: {GRAD_NORM} = 0 with advantages in "
                f"[{m.get(ADV_MIN, 0):.3g}, {m.get(ADV_MAX, 0):.3g}]: the loss does not reach the weights",
            )
        if m.get(LR, 1.0) <= 0:
            return Gate(
                name,
                GateStatus.FAIL,
                m[LR],
                bar,
                f"step {s.step}: {LR} = {m[LR]:g}: the optimizer does not move the weights",
            )
    kls = [abs(s.metrics[PPO_KL]) for s in judged if PPO_KL in s.metrics and math.isfinite(s.metrics[PPO_KL])]
    if gates.update_kl_min is not None and kls:
        median = statistics.median(kls)
        if median < gates.update_kl_min:
            return Gate(
                name,
                GateStatus.FAIL,
                f"{median:.3g}",
                bar,
                f"median |{PPO_KL}| {median:.3g} over {len(kls)} steps with an advantage: the second "
                "mini-batch saw the policy unchanged, so the optimizer step did not move the weights",
            )
        return Gate(
            name,
            GateStatus.PASS,
            f"{median:.3g}",
            bar,
            f"{len(judged)} steps with an advantage; median |{PPO_KL}| {median:.3g}",
        )
    return Gate(
        name,
        GateStatus.PASS,
        len(judged),
        bar,
        f"{len(judged)} steps with an advantage, grad norm and lr above 0 on each"
        + (f"; {gates.update_kl_off}" if gates.update_kl_off else "")
        + ("" if gates.update_kl_min is None else f" ({PPO_KL} not logged)"),
    )


def _synced(scan: LogScan, gates: Gates, applied: set[int]) -> Gate:
    after = [s for s in scan.steps if s.step - 1 in applied]
    gate = _agreement("weights-synced", after, gates, f"the {len(after)} steps after an applied update")
    if after or gate.status is not GateStatus.SKIP:
        return gate
    return Gate(
        gate.name,
        GateStatus.SKIP,
        None,
        gate.threshold,
        "no step followed an applied update (see update-applied): before the trainer moves, the rollout "
        "agrees with it whether or not weights are synced, so the sync is not shown",
    )
