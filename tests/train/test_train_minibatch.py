"""update-applied on the HF smoke (verl 0.5.0): two mini-batches per step, so a skipped optimizer step
shows in ``actor/ppo_kl``; and a command with one optimizer step per training step, where ppo_kl is 0
by construction, has that bar turned off rather than read as a skipped step.

The runs are the fourth pass's, on three H100s (docs/validation/vllm-smoke/runs4/): nine healthy, on
two machines the optimizer step skipped (opt-skip-v05) and the advantage negated (adv-sign-v05), and
a healthy run with ``ppo_mini_batch_size=16`` (one mini-batch per step, ppo_kl 0 on all 40 steps); the
H200 smoke of 2026-11-21 took one mini-batch too (fixtures/smoke_h200_pass.log, ppo_kl 0 on 30 steps).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from standin import stand_in

from patchctl.target import open_tree
from patchctl.train import minibatch, run, signals
from patchctl.train.gates import Gate, GateStatus
from patchctl.train.logparse import LogScan, Step, scan_text
from patchctl.train.margins import margins
from patchctl.train.profiles import Gates, load_profile

RUNS = Path(__file__).resolve().parents[2] / "docs/validation/vllm-smoke/runs4"
HEALTHY = sorted(RUNS.glob("[fgh]-healthy-*-report.json"))
ONE_MINI_BATCH = Path(__file__).with_name("fixtures") / "smoke_h200_pass.log"
SMOKE = load_profile("smoke")


def report_scan(path: Path) -> LogScan:
    scan = LogScan()
    scan.steps = [Step(s["step"], s["at"], s["metrics"]) for s in json.loads(path.read_text())["steps"]]
    return scan


def update_gate(scan: LogScan, gates: Gates = SMOKE.gates) -> Gate:
    return {g.name: g for g in signals.evaluate(scan, gates)}["update-applied"]


def test_the_smoke_profile_takes_two_optimizer_steps_per_step() -> None:
    assert minibatch.per_step(SMOKE.overrides) == 2
    assert SMOKE.gates.update_kl_min is not None


@pytest.mark.parametrize("report", HEALTHY, ids=lambda p: p.name)
def test_healthy_hf_runs_pass_with_their_ppo_kl(report: Path) -> None:
    gate, bar = update_gate(report_scan(report)), SMOKE.gates.update_kl_min
    assert gate.status is GateStatus.PASS and "median |actor/ppo_kl|" in gate.reason
    assert bar is not None and float(str(gate.value)) > 500 * bar  # the healthy spread, far above the bar


@pytest.mark.parametrize("machine", ["f", "g"])
def test_a_skipped_optimizer_step_fails_update_applied(machine: str) -> None:
    gate = update_gate(report_scan(RUNS / f"{machine}-opt-skip-v05-report.json"))
    assert gate.status is GateStatus.FAIL and "the optimizer step did not move the weights" in gate.reason


@pytest.mark.parametrize("machine", ["f", "g"])
def test_a_negated_advantage_still_moves_the_policy(machine: str) -> None:
    """adv-sign is learning's to catch: its update moves the policy, the wrong way."""
    assert update_gate(report_scan(RUNS / f"{machine}-adv-sign-v05-report.json")).status is GateStatus.PASS


def test_a_healthy_run_with_ppo_kl_zeroed_fails() -> None:
    """A healthy run's metrics with every step's ppo_kl at 0, as a skipped optimizer step leaves it."""
    scan = report_scan(HEALTHY[0])
    scan.steps = [Step(s.step, s.at, {**s.metrics, signals.PPO_KL: 0.0}) for s in scan.steps]
    gate = update_gate(scan)
    assert gate.status is GateStatus.FAIL and gate.value == "0"


@pytest.mark.parametrize(
    ("extra", "steps"),
    [
        ([], 2),
        (["actor_rollout_ref.actor.ppo_mini_batch_size=16"], 1),
        (["actor_rollout_ref.actor.ppo_mini_batch_size=16", "+actor_rollout_ref.actor.ppo_epochs=2"], 2),
        (["actor_rollout_ref.actor.ppo_mini_batch_size=5"], 4),
        (["data.train_batch_size=${oc.env:B}"], None),
    ],
)
def test_optimizer_steps_per_step_from_the_command(extra: list[str], steps: int | None) -> None:
    assert minibatch.per_step([*SMOKE.overrides, *extra]) == steps


def test_one_optimizer_step_per_step_turns_the_ppo_kl_bar_off(tmp_path: Path) -> None:
    tree = open_tree(stand_in(tmp_path / "t", "0.5.0"))
    mine = ["actor_rollout_ref.actor.ppo_mini_batch_size=16"]
    plan = run.plan(tree, SMOKE, None, mine, "py", tmp_path / "r")
    assert plan.profile.gates.update_kl_min is None
    assert "ppo_mini_batch_size=16" in plan.profile.gates.update_kl_off
    scan = scan_text(ONE_MINI_BATCH.read_text())
    # judged as the profile's command, its ppo_kl of 0 would read as a skipped step
    assert update_gate(scan).status is GateStatus.FAIL
    gate = update_gate(scan, plan.profile.gates)
    assert gate.status is GateStatus.PASS and "0 by construction" in gate.reason
    assert "update-kl" not in margins(scan, plan.profile.gates, 40.0)
    # the profile as written keeps its bar
    assert run.plan(tree, SMOKE, None, [], "py", tmp_path / "r2").profile.gates == SMOKE.gates


def test_the_h100_one_mini_batch_run_was_judged_without_the_ppo_kl_bar() -> None:
    """The real run: its command, its ppo_kl of 0 on every step, and the verdict patchctl gave it."""
    report = RUNS / "h-one-mini-batch-report.json"
    doc = json.loads(report.read_text())
    assert minibatch.per_step(doc["command"]) == 1
    gates = minibatch.fit(SMOKE.gates, doc["command"])
    assert update_gate(report_scan(report)).status is GateStatus.FAIL  # read with the profile's bar
    assert update_gate(report_scan(report), gates).status is GateStatus.PASS
    recorded = {g["name"]: g for g in doc["gates"]}["update-applied"]
    assert recorded["status"] == "pass" and "0 by construction" in recorded["reason"]
