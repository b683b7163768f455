"""The reward-independent gates on recorded metric series, and on broken ones that must FAIL.

Recorded: verl 0.9.1 + vLLM 0.24's debug run on an H100 (every reward 0; it logs the rollout/trainer
agreement), and verl 0.5.0's HF smoke run on an H200 (it learns; it logs no rollout log-probs).
No vLLM run that learns was recorded yet, so the learning vLLM series is a composite: the smoke
run's steps (advantages, grad norms, lr) with the 0.9.1 run's agreement metrics, and an
``actor/ppo_kl`` of the second mini-batch's size (TODO(gpu): replace by a real smoke-vllm report,
docs/validation/gates-calibration-todo.md). Each broken series is that healthy one with the
metrics a sabotage changes, changed the way the sabotage changes them.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from patchctl.train import minibatch, signals
from patchctl.train.gates import GateStatus
from patchctl.train.logparse import LogScan, Step, scan_text
from patchctl.train.profiles import Gates, load_profiles

REPO = Path(__file__).resolve().parents[2]
VLLM_RUN = REPO / "docs/validation/vllm/runs/a-debug-report.json"
HF_RUN = Path(__file__).with_name("fixtures") / "smoke_h200_pass.log"
GATES = load_profiles()["smoke-vllm"].gates
AGREE = (
    "training/rollout_actor_probs_pearson_corr",
    "training/rollout_probs_diff_mean",
    "rollout_corr/kl",
    "training/rollout_probs_diff_valid",
)


def report_scan(path: Path) -> LogScan:
    scan = LogScan()
    for s in json.loads(path.read_text())["steps"]:
        scan.steps.append(
            Step(s["step"], s["at"], {k: float("nan") if v is None else v for k, v in s["metrics"].items()})
        )
    return scan


def learning_vllm() -> LogScan:
    """The composite healthy learning run on vLLM (see the module's docstring)."""
    hf, agree = scan_text(HF_RUN.read_text()), report_scan(VLLM_RUN).steps
    scan = LogScan()
    for i, s in enumerate(hf.steps):
        extra = {k: agree[i % len(agree)].metrics[k] for k in AGREE}
        scan.steps.append(
            Step(s.step, s.at, {**s.metrics, **extra, "actor/ppo_kl": 2e-3 if signals.has_advantage(s) else 0.0})
        )
    return scan


def status(scan: LogScan, gates: Gates = GATES) -> dict[str, str]:
    return {g.name: g.status.value for g in signals.evaluate(scan, gates)}


def changed(scan: LogScan, after: int, **metrics: float) -> LogScan:
    """``scan`` with ``metrics`` set on every step after ``after``."""
    out = LogScan()
    out.steps = [Step(s.step, s.at, {**s.metrics, **(metrics if s.step > after else {})}) for s in scan.steps]
    return out


def named(**metrics: float) -> dict[str, float]:
    return {k.replace("__", "/"): v for k, v in metrics.items()}


def test_recorded_vllm_run_without_reward_agrees_and_skips_the_rest() -> None:
    gates = {g.name: g for g in signals.evaluate(report_scan(VLLM_RUN), GATES)}
    assert gates["rollout-agrees"].status is GateStatus.PASS
    assert "pearson 0.999958 (step 3)" in str(gates["rollout-agrees"].value)
    assert (
        gates["update-applied"].status is GateStatus.SKIP and "every advantage was 0" in gates["update-applied"].reason
    )
    assert gates["weights-synced"].status is GateStatus.SKIP


def test_recorded_hf_run_says_the_agreement_is_not_available() -> None:
    # that run took one mini-batch per step (ppo_kl 0 by construction): judged as its command was
    one_step = ["data.train_batch_size=16", "actor_rollout_ref.actor.ppo_mini_batch_size=16"]
    smoke = minibatch.fit(load_profiles()["smoke"].gates, one_step)
    gates = {g.name: g for g in signals.evaluate(scan_text(HF_RUN.read_text()), smoke)}
    assert gates["rollout-agrees"].status is GateStatus.SKIP
    assert gates["rollout-agrees"].reason.startswith("verl logged no rollout log-probs")
    assert gates["update-applied"].status is GateStatus.PASS
    assert gates["weights-synced"].status is GateStatus.SKIP


def test_healthy_learning_vllm_run_passes() -> None:
    assert status(learning_vllm()) == {"rollout-agrees": "pass", "update-applied": "pass", "weights-synced": "pass"}


def test_weight_sync_off_fails_weights_synced_only() -> None:
    """The rollout keeps the first policy: step 1 agrees, then the trainer moves away from it."""
    broken = changed(
        learning_vllm(),
        1,
        **named(
            training__rollout_actor_probs_pearson_corr=0.93,
            training__rollout_probs_diff_mean=0.04,
            rollout_corr__kl=0.2,
        ),
    )
    assert status(broken) == {"rollout-agrees": "pass", "update-applied": "pass", "weights-synced": "fail"}


def test_corrupted_sampling_fails_from_the_first_step() -> None:
    broken = changed(
        learning_vllm(),
        0,
        **named(training__rollout_actor_probs_pearson_corr=0.7, training__rollout_probs_diff_mean=0.08),
    )
    got = {g.name: g for g in signals.evaluate(broken, GATES)}
    assert got["rollout-agrees"].status is GateStatus.FAIL and got["weights-synced"].status is GateStatus.FAIL
    assert got["rollout-agrees"].reason.startswith("step 1: training/rollout_actor_probs_pearson_corr = 0.7")


@pytest.mark.parametrize(
    ("metric", "value", "says"),
    [
        ("actor/grad_norm", 0.0, "the loss does not reach the weights"),
        ("actor/lr", 0.0, "the optimizer does not move the weights"),
        ("actor/ppo_kl", 0.0, "the optimizer step did not move the weights"),
        ("actor/grad_norm", float("nan"), "is not finite"),
    ],
)
def test_an_update_that_does_nothing_fails(metric: str, value: float, says: str) -> None:
    got = {g.name: g for g in signals.evaluate(changed(learning_vllm(), 0, **{metric: value}), GATES)}
    assert got["update-applied"].status is GateStatus.FAIL and says in got["update-applied"].reason
    # no update moved the policy, so whether weights reach the rollout is not shown: SKIP, not PASS
    assert got["weights-synced"].status is GateStatus.SKIP


def test_no_bar_is_a_skip_that_says_so() -> None:
    bare = replace(GATES, agree_pearson_min=None, agree_probs_diff_max=None, agree_kl_max=None)
    got = signals.evaluate(learning_vllm(), bare)[0]
    assert got.status is GateStatus.SKIP and "sets no agree_* bar" in got.reason


def test_invalid_steps_are_not_judged() -> None:
    """verl writes nan and valid 0 when a batch has no response token: not a disagreement."""
    scan = changed(
        learning_vllm(),
        0,
        **named(training__rollout_probs_diff_valid=0.0, training__rollout_actor_probs_pearson_corr=float("nan")),
    )
    got = signals.evaluate(scan, replace(GATES, agree_probs_diff_max=None, agree_kl_max=None))[0]
    assert got.status is GateStatus.SKIP


def test_margins_of_a_healthy_and_a_broken_run() -> None:
    from patchctl.train.margins import margins

    healthy = margins(learning_vllm(), GATES, 95.0)
    assert healthy["time-to-first-step"] == pytest.approx(GATES.first_step_max_s / 95, abs=0.01)
    assert healthy["agree-pearson"] == pytest.approx(0.02 / (1 - 0.9999581575393677), rel=0.01)
    assert min(healthy.values()) > 1  # every gate passes with room
    broken = margins(
        changed(learning_vllm(), 1, **named(training__rollout_actor_probs_pearson_corr=0.93, actor__ppo_kl=0.0)),
        GATES,
        400.0,
    )
    assert broken["agree-pearson"] < 1 and broken["time-to-first-step"] < 1 and broken["update-kl"] < 1
