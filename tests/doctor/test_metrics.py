"""Issue 37, requirement 4: failures that print no error, read from a report.json's metrics.

The reports are our own GPU runs (docs/validation): the healthy ones must yield no finding, each
sabotaged one (advantage sign flipped, optimizer step skipped, learning rate 0, weight sync off,
rollout temperature ignored) the finding its sabotage causes. Failures no run of ours produced
(NaN, collapse, explosion, pinned lengths, a constant reward) are planted into a copy of a healthy
report, one metric changed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from patchctl.doctor.metrics import diagnose_metrics, load_report
from patchctl.errors import LogUnreadable

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "docs/validation"
HEALTHY = sorted(
    [
        *RUNS.glob("vllm-smoke/runs*/*healthy*-report.json"),
        *RUNS.glob("smoke-h100*-report.json"),
        *RUNS.glob("multinode/*/report.json"),
        RUNS / "vllm-smoke/runs2/validate/report.json",
    ]
)
#: sabotage -> the report's first finding
SABOTAGE = {
    "vllm-smoke/runs/adv-sign-report.json": "reward-zero",
    "vllm-smoke/runs2/b-adv-sign-report.json": "reward-zero",
    "vllm-smoke/runs3/d-adv-sign-report.json": "reward-zero",
    "vllm-smoke/runs3/v05-adv-sign-report.json": "reward-zero",
    "vllm-smoke/runs4/f-adv-sign-v05-report.json": "reward-zero",
    "vllm-smoke/runs4/g-adv-sign-v05-report.json": "reward-zero",
    "vllm-smoke/runs/opt-skip-report.json": "policy-not-updating",
    "vllm-smoke/runs3/c-opt-skip-report.json": "policy-not-updating",
    "vllm-smoke/runs3/v05-opt-skip-report.json": "policy-not-updating",
    "vllm-smoke/runs4/f-opt-skip-v05-report.json": "policy-not-updating",
    "vllm-smoke/runs4/g-opt-skip-v05-report.json": "policy-not-updating",
    "vllm-smoke/runs2/a-lr-zero-report.json": "policy-not-updating",
    "vllm-smoke/runs3/d-lr-zero-report.json": "policy-not-updating",
    "vllm-smoke/runs2/a-sync-off-report.json": "rollout-probs-diff",
    "vllm-smoke/runs3/d-sync-off-report.json": "rollout-probs-diff",
    "vllm-smoke/runs/temp-ignored-report.json": "rollout-probs-diff",
    "vllm-smoke/runs3/c-temp-ignored-report.json": "rollout-probs-diff",
}
BASE = RUNS / "vllm-smoke/runs2/a-healthy-1-report.json"


def _found(path: Path) -> list:
    return diagnose_metrics(load_report(path)[1])


def test_there_are_healthy_reports_to_check():
    assert len(HEALTHY) >= 25


@pytest.mark.parametrize("report", HEALTHY, ids=lambda p: str(p.relative_to(RUNS)))
def test_a_healthy_run_has_no_finding(report):
    assert _found(report) == []


@pytest.mark.parametrize("report", sorted(SABOTAGE))
def test_a_sabotaged_run_gets_the_finding_its_sabotage_causes(report):
    found = _found(RUNS / report)
    assert found and found[0].id == SABOTAGE[report], [f.id for f in found]
    assert found[0].causes and found[0].check


def test_flipped_advantages_show_as_reward_and_gradient_at_zero():
    found = _found(RUNS / "vllm-smoke/runs2/b-adv-sign-report.json")
    assert [f.id for f in found] == ["reward-zero", "grad-norm-zero"]
    assert found[0].evidence == "critic/score/mean is 0 on 5 of steps 16-20 (mean 0; it was 0.0305 on steps 1-5)"
    assert "wrong sign" in found[0].causes[0]


def test_a_learning_rate_of_zero_is_named_as_the_first_cause():
    (f,) = _found(RUNS / "vllm-smoke/runs2/a-lr-zero-report.json")
    assert f.evidence.startswith("actor/lr is 0 on every step; actor/ppo_kl median 0 over steps 1-20")
    assert f.causes[0].startswith("the learning rate is 0")
    (skip,) = _found(RUNS / "vllm-smoke/runs3/c-opt-skip-report.json")
    assert skip.causes[0].startswith("the optimizer step is skipped")


def test_sync_off_and_an_ignored_temperature_are_told_apart_by_the_first_step():
    (sync,) = _found(RUNS / "vllm-smoke/runs2/a-sync-off-report.json")
    assert sync.causes[0].startswith("the rollout samples from stale weights")
    temp = _found(RUNS / "vllm-smoke/runs/temp-ignored-report.json")[0]
    assert temp.causes[0].startswith("the rollout samples with other settings")


def _planted(tmp_path: Path, change) -> Path:
    doc = json.loads(BASE.read_text(encoding="utf-8"))
    for s in doc["steps"]:
        change(s["step"], s["metrics"])
    out = tmp_path / "report.json"
    out.write_text(json.dumps(doc), encoding="utf-8")
    return out


def test_a_nan_step_is_a_finding_naming_the_step_and_metric(tmp_path):
    def nan(step, m):
        if step >= 7:
            m["actor/pg_loss"] = float("nan")

    (f,) = _found(_planted(tmp_path, nan))
    assert f.id == "nan-steps" and f.evidence.startswith(
        "14 step(s) with NaN/inf/missing values, first step 7: actor/pg_loss=nan"
    )


def test_entropy_collapse(tmp_path):
    def collapse(step, m):
        if step > 10:
            m["actor/entropy"] = 0.01

    assert [f.id for f in _found(_planted(tmp_path, collapse))] == ["entropy-collapsed"]


def test_an_exploding_grad_norm(tmp_path):
    def explode(step, m):
        if step == 12:
            m["actor/grad_norm"] = 250.0

    (f,) = _found(_planted(tmp_path, explode))
    assert f.id == "grad-norm-exploding" and "250 at step 12" in f.evidence


def test_responses_pinned_at_the_maximum_while_the_reward_stays(tmp_path):
    def pinned(step, m):
        m["response_length/clip_ratio"] = 1.0
        m["critic/score/mean"] = 0.05 + 0.001 * (step % 3)

    assert [f.id for f in _found(_planted(tmp_path, pinned))] == ["response-length-pinned"]


def test_a_constant_reward(tmp_path):
    def constant(step, m):
        m["critic/score/mean"] = 1.0

    found = _found(_planted(tmp_path, constant))
    assert found[0].id == "reward-constant" and found[0].evidence == "critic/score/mean is 1 on every one of steps 1-20"


def _doctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "patchctl", "doctor", *args], capture_output=True, text=True)


def test_doctor_reads_a_run_directory_and_prints_causes_and_check(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "report.json").write_text((RUNS / "vllm-smoke/runs2/a-sync-off-report.json").read_text(encoding="utf-8"))
    out = _doctor(str(run))
    assert out.returncode == 0, out.stderr
    assert "1. Rollout and actor disagree on the sampled tokens' probabilities [rollout-probs-diff]" in out.stdout
    assert "cause:    1) the rollout samples from stale weights" in out.stdout and "check:" in out.stdout
    js = json.loads(_doctor("--json", str(run / "report.json")).stdout)
    assert [f["id"] for f in js["findings"]] == ["rollout-probs-diff"] and js["steps"] == 20


def test_doctor_on_a_healthy_report_says_so():
    out = _doctor(str(BASE))
    assert out.returncode == 0 and out.stdout.startswith("doctor: no failure in the metrics of")


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "not JSON (line 1"),
        ('{"verdict": "pass"}', "has no steps[].metrics"),
        ('{"steps": [{"step": 1}]}', "has no steps[].metrics"),
    ],
)
def test_a_file_that_is_no_report_is_a_one_line_error(tmp_path, content, problem):
    bad = tmp_path / "report.json"
    bad.write_text(content, encoding="utf-8")
    out = _doctor(str(bad))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and str(bad) in out.stderr and problem in out.stderr
    with pytest.raises(LogUnreadable):
        load_report(bad)


def test_a_directory_without_a_report_is_a_one_line_error(tmp_path):
    out = _doctor(str(tmp_path))
    assert out.returncode == 2 and f"{tmp_path}: no report.json in this directory" in out.stderr


def test_a_report_without_steps_points_at_the_log():
    """Our sync-off run died before its first step: its report has no metrics to read."""
    out = _doctor(str(RUNS / "vllm-smoke/runs/sync-off-report.json"))
    assert out.returncode == 0 and "has no training step: the run ended before its first step" in out.stdout


def test_step_numbers_that_are_not_integers_are_counted(tmp_path):
    report = tmp_path / "report.json"
    steps = [{"step": "x", "metrics": {"critic/score/mean": 0.0}} for _ in range(4)]
    report.write_text(json.dumps({"steps": steps}), encoding="utf-8")
    (f,) = diagnose_metrics(load_report(report)[1])
    assert f.id == "reward-zero" and f.evidence == "critic/score/mean is 0 on every one of steps 1-4"
