"""Which steps the reward-independent gates judge, and where their bars sit, on small constructed runs.

Issue 41's second audit planted one-line bugs in train/signals.py that the recorded-run tests let
pass: the step after an update taken for the one before it, a bar moved onto its own value, a
configured bar dropped, the sign of a KL kept. Each run here is a few steps whose metrics are set
so that exactly one step decides a gate; each test asserts the gate's status and what it tells the user.
"""

from __future__ import annotations

from dataclasses import replace

from patchctl.train import signals
from patchctl.train.gates import Gate, GateStatus
from patchctl.train.logparse import LogScan, Step
from patchctl.train.profiles import Gates

BARS = Gates(agree_pearson_min=0.98, agree_probs_diff_max=0.01, agree_kl_max=0.02, update_kl_min=1e-6)
#: a step whose update moved the policy: advantages, grad norm, lr and ppo_kl all above 0
MOVED = {signals.ADV_MAX: 1.0, signals.ADV_MIN: -1.0, signals.GRAD_NORM: 0.5, signals.LR: 1e-6, signals.PPO_KL: 5e-3}
#: rollout and trainer agree
AGREE = {signals.PEARSON: 0.9999, signals.PROBS_DIFF: 1e-5, signals.CORR_KL: 1e-4}
#: the rollout samples from an old policy
APART = {signals.PEARSON: 0.5, signals.PROBS_DIFF: 0.2, signals.CORR_KL: 0.9}


def run(*steps: dict[str, float]) -> LogScan:
    scan = LogScan()
    scan.steps = [Step(i, float(i), dict(m)) for i, m in enumerate(steps, 1)]
    return scan


def gates(scan: LogScan, bars: Gates = BARS) -> dict[str, Gate]:
    return {g.name: g for g in signals.evaluate(scan, bars)}


# -- which steps each agreement gate judges ------------------------------------------------------


def test_weights_synced_judges_exactly_the_step_after_each_update() -> None:
    """Step 1 moves the policy, step 2 (the one after it) disagrees, step 3 agrees again: step 2
    decides weights-synced; rollout-agrees judges steps 1 and 3, which no update preceded."""
    g = gates(run({**MOVED, **AGREE}, {**APART}, {**AGREE}))
    assert g["weights-synced"].status is GateStatus.FAIL
    assert g["weights-synced"].reason.startswith("step 2: training/rollout_actor_probs_pearson_corr = 0.5")
    assert "(the 1 steps after an applied update)" in g["weights-synced"].reason
    assert g["rollout-agrees"].status is GateStatus.PASS
    assert g["rollout-agrees"].reason.startswith("worst over the 2 steps no applied update preceded")


def test_a_ppo_kl_exactly_at_its_bar_counts_as_an_applied_update() -> None:
    """|ppo_kl| == update_kl_min is at the bar, not under it: step 2 follows an applied update."""
    g = gates(run({**MOVED, signals.PPO_KL: 1e-6, **AGREE}, {**APART}))
    assert (g["rollout-agrees"].status, g["weights-synced"].status) == (GateStatus.PASS, GateStatus.FAIL)
    assert g["update-applied"].status is GateStatus.PASS


def test_an_advantage_of_at_most_the_epsilon_is_zero() -> None:
    """GRPO's advantages of equal rewards are 0 up to rounding: such a step asks for no update,
    so its grad norm of 0 is no failure."""
    tiny = {signals.ADV_MAX: signals.ADV_EPS, signals.ADV_MIN: -signals.ADV_EPS, signals.GRAD_NORM: 0.0}
    g = gates(run({**tiny, **AGREE}))
    assert g["update-applied"].status is GateStatus.SKIP
    assert g["update-applied"].value == 0  # steps with an advantage
    assert g["update-applied"].reason.startswith("every advantage was 0")


def test_weights_synced_says_why_it_skips() -> None:
    # no update applied: nothing could show the sync
    g = gates(run({**AGREE}, {**AGREE}))
    assert g["weights-synced"].status is GateStatus.SKIP
    assert g["weights-synced"].reason.startswith("no step followed an applied update")
    # updates applied but verl logged no agreement metric: that is the reason given
    g = gates(run({**MOVED}, {**MOVED}))
    assert g["weights-synced"].status is GateStatus.SKIP
    assert g["weights-synced"].reason.startswith("verl logged no rollout log-probs")


def test_a_run_with_no_step_has_nothing_to_judge() -> None:
    g = gates(run())
    assert g["rollout-agrees"].status is GateStatus.SKIP
    assert g["rollout-agrees"].reason == "no step to judge (the 0 steps no applied update preceded)"


# -- the agreement bars --------------------------------------------------------------------------


def test_every_configured_bar_is_shown_and_applied() -> None:
    (g, *_) = signals.evaluate(run({**AGREE}), BARS)
    assert g.threshold == "pearson >= 0.98, mean |p diff| <= 0.01, |kl| <= 0.02"
    assert signals.evaluate(run({**AGREE}), Gates())[0].threshold == "none"
    only_diff = Gates(agree_probs_diff_max=0.01)
    assert gates(run({**AGREE, signals.PROBS_DIFF: 0.2}), only_diff)["rollout-agrees"].status is GateStatus.FAIL
    only_kl = Gates(agree_kl_max=0.02)
    got = gates(run({**AGREE, signals.CORR_KL: 0.9}), only_kl)["rollout-agrees"]
    assert got.status is GateStatus.FAIL and got.reason.startswith("step 1: rollout_corr/kl = 0.9, bar <= 0.02")


def test_a_negative_kl_is_judged_by_its_size() -> None:
    got = gates(run({**AGREE, signals.CORR_KL: -0.5}))["rollout-agrees"]
    assert got.status is GateStatus.FAIL and got.reason.startswith("step 1: rollout_corr/kl = 0.5, bar <= 0.02")


def test_a_value_exactly_on_an_agreement_bar_passes() -> None:
    on_bars = {signals.PEARSON: 0.98, signals.PROBS_DIFF: 0.01, signals.CORR_KL: 0.02}
    got = gates(run(on_bars))["rollout-agrees"]
    assert got.status is GateStatus.PASS, got.reason
    assert got.value == "pearson 0.98 (step 1); mean |p diff| 0.01 (step 1); |kl| 0.02 (step 1)"


# -- update-applied ------------------------------------------------------------------------------


def test_no_grad_norm_logged_is_a_skip_not_a_failure() -> None:
    no_grad = {k: v for k, v in MOVED.items() if k != signals.GRAD_NORM}
    got = gates(run(no_grad))["update-applied"]
    assert (got.status, got.reason) == (GateStatus.SKIP, "verl logged no actor/grad_norm")


def test_the_ppo_kl_median_skips_steps_that_did_not_log_it() -> None:
    """Step 2 logged no ppo_kl: the median is step 1's and 3's, and the gate passes."""
    no_kl = {k: v for k, v in MOVED.items() if k != signals.PPO_KL}
    got = gates(run({**MOVED, signals.PPO_KL: 2e-3}, no_kl, {**MOVED, signals.PPO_KL: 4e-3}))["update-applied"]
    assert (got.status, got.value) == (GateStatus.PASS, "0.003")
    assert got.reason == "3 steps with an advantage; median |actor/ppo_kl| 0.003"


def test_a_ppo_kl_median_exactly_at_its_bar_passes() -> None:
    got = gates(run({**MOVED, signals.PPO_KL: -1e-6}))["update-applied"]
    assert (got.status, got.value) == (GateStatus.PASS, "1e-06")


def test_the_update_gate_says_when_ppo_kl_was_not_logged() -> None:
    no_kl = {k: v for k, v in MOVED.items() if k != signals.PPO_KL}
    got = gates(run(no_kl))["update-applied"]
    assert got.status is GateStatus.PASS
    assert got.reason == "1 steps with an advantage, grad norm and lr above 0 on each (actor/ppo_kl not logged)"
    got = gates(run(no_kl), replace(BARS, update_kl_min=None))["update-applied"]
    assert got.reason == "1 steps with an advantage, grad norm and lr above 0 on each"
