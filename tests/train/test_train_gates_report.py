"""Gates and report writing, from real log excerpts and constructed scans."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from patchctl.train import report
from patchctl.train.gates import GateStatus, evaluate, verdict
from patchctl.train.logparse import LogScan, scan_text
from patchctl.train.profiles import Gates

FIXTURES = Path(__file__).parent / "fixtures"
SMOKE = Gates(
    min_steps=30, first_step_max_s=60, learning_metric="critic/score/mean", learning_window=5, learning_min_gain=0.3
)


def by_name(gates: list) -> dict:
    return {g.name: g for g in gates}


def test_real_pass_passes_every_gate() -> None:
    scan = scan_text((FIXTURES / "smoke_h200_pass.log").read_text(encoding="utf-8"))
    gates = evaluate(0, scan, SMOKE, 33.0)
    assert [g.name for g in gates] == ["exit-code", "steps-logged", "metrics-finite", "time-to-first-step", "learning"]
    assert all(g.status is GateStatus.PASS for g in gates), gates
    assert by_name(gates)["learning"].value == pytest.approx(0.5977, abs=1e-3)
    assert verdict(gates)


def test_real_failure_fails_with_reasons() -> None:
    scan = scan_text((FIXTURES / "smoke_tp_assert_fail.log").read_text(encoding="utf-8"))
    gates = by_name(evaluate(1, scan, SMOKE, None))
    assert gates["exit-code"].status is GateStatus.FAIL and gates["exit-code"].value == 1
    assert gates["steps-logged"].value == 0
    assert gates["time-to-first-step"].reason == "no training step was logged"
    assert "needs 10" in gates["learning"].reason
    assert not verdict(list(gates.values()))


def scan_of(rewards: list[float], loss: float = 0.1) -> LogScan:
    scan = LogScan()
    for i, r in enumerate(rewards, 1):
        scan.feed(f"step:{i} - actor/pg_loss:{loss} - critic/score/mean:{r}", float(i))
    return scan


def test_non_finite_and_no_learning() -> None:
    scan = scan_of([0.1] * 30, loss=math.nan)
    gates = by_name(evaluate(0, scan, SMOKE, 1.0))
    assert gates["metrics-finite"].status is GateStatus.FAIL
    assert gates["metrics-finite"].reason == "step 1: actor/pg_loss = nan"
    assert gates["learning"].status is GateStatus.FAIL and gates["learning"].value == 0.0


def test_slow_first_step_and_missing_steps() -> None:
    gates = by_name(evaluate(0, scan_of([0.1] * 3), Gates(min_steps=5, first_step_max_s=10), 12.5))
    assert gates["time-to-first-step"].status is GateStatus.FAIL
    assert gates["time-to-first-step"].threshold == "<= 10 s"
    assert gates["steps-logged"].status is GateStatus.FAIL
    assert "learning" not in gates


def test_report_json_and_plot(tmp_path: Path) -> None:
    scan = scan_of([0.1 * i for i in range(10)], loss=math.inf)
    gates = evaluate(0, scan, SMOKE, 1.0)
    timings = report.Timings(0.5, 0.5, 8.0, 15.0, 26.0, 27.0, 31.0, 34.0, 34.1)
    assert timings.breakdown() == {
        "startup": 8.0,
        "ray": 7.0,
        "workers": 11.0,
        "first_step": 1.0,
        "steps": 4.0,
        "teardown": 3.0,
        "report": 0.1,
    }
    doc = report.document(
        run={"profile": "smoke"},
        tree={"root": "/t"},
        versions={"torch": "2"},
        gpus=[],
        timings=timings,
        scan=scan,
        gates=gates,
        passed=verdict(gates),
        doctor=None,
    )
    path = report.write_json(tmp_path / "report.json", doc)
    back = json.loads(path.read_text())
    assert back["verdict"] == "fail" and back["profile"] == "smoke"
    assert back["steps"][0]["metrics"]["actor/pg_loss"] is None  # inf is written as null
    assert {g["name"]: g["status"] for g in back["gates"]}["metrics-finite"] == "fail"


def test_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    scan = scan_of([0.1 * i for i in range(10)])
    png = report.plot(tmp_path / "report.png", scan, "title")
    assert png is not None and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert report.plot(tmp_path / "none.png", LogScan(), "title") is None


def test_a_run_that_stops_before_its_announced_total_fails_however_low_min_steps() -> None:
    """verl says how many steps it will run; ending early is a failure even above min_steps (#18 audit)."""
    scan = LogScan()
    scan.feed("Total training steps: 8")
    for i in range(1, 6):
        scan.feed(f"step:{i} - actor/pg_loss:0.1 - critic/score/mean:0.5")
    gate = by_name(evaluate(0, scan, Gates(min_steps=3), 1.0))["steps-logged"]
    assert (gate.status, gate.value, gate.threshold) == (GateStatus.FAIL, 5, ">= 8")
    assert gate.reason == "5 training steps logged, expected 8"
    for i in range(6, 9):
        scan.feed(f"step:{i} - actor/pg_loss:0.1 - critic/score/mean:0.5")
    assert by_name(evaluate(0, scan, Gates(min_steps=3), 1.0))["steps-logged"].status is GateStatus.PASS
    assert by_name(evaluate(0, scan, Gates(min_steps=9), 1.0))["steps-logged"].threshold == ">= 9"


@pytest.mark.parametrize(
    ("last", "status"), [(0.75, GateStatus.PASS), (0.7499, GateStatus.FAIL), (0.7501, GateStatus.PASS)]
)
def test_the_learning_bar_includes_its_boundary(last: float, status: GateStatus) -> None:
    """A gain of exactly learning_min_gain passes; a hair below fails (#18 audit)."""
    gates = Gates(learning_metric="critic/score/mean", learning_window=2, learning_min_gain=0.25)
    gate = by_name(evaluate(0, scan_of([0.5, 0.5, last, last]), gates, 1.0))["learning"]
    assert gate.status is status and gate.threshold == "last 2 - first 2 >= 0.25"


def test_the_learning_check_needs_two_full_windows() -> None:
    gates = Gates(learning_metric="critic/score/mean", learning_window=3, learning_min_gain=0.1)
    short = by_name(evaluate(0, scan_of([0.0, 0.0, 0.0, 1.0, 1.0]), gates, 1.0))["learning"]
    assert short.status is GateStatus.FAIL and short.value is None
    assert short.reason == "critic/score/mean: 5 steps logged, the check needs 6"
    full = by_name(evaluate(0, scan_of([0.0, 0.0, 0.0, 1.0, 1.0, 1.0]), gates, 1.0))["learning"]
    assert full.status is GateStatus.PASS and full.value == 1.0


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (None, "the trainer was stopped (timeout or interrupt)"),
        (2, "the trainer exited with 2; the log's last lines say why"),
        (0, "the trainer exited cleanly"),
    ],
)
def test_the_exit_code_gate_says_how_the_trainer_ended(code: int | None, reason: str) -> None:
    gate = by_name(evaluate(code, scan_of([0.1]), Gates(), 1.0))["exit-code"]
    assert (gate.status is GateStatus.PASS, gate.value, gate.reason) == (code == 0, code, reason)


def test_a_run_with_no_steps_fails_every_step_gate_and_skips_none() -> None:
    gates = evaluate(0, LogScan(), Gates(min_steps=0), None)
    assert [g.name for g in gates] == ["exit-code", "steps-logged", "metrics-finite", "time-to-first-step"]
    got = by_name(gates)
    # min_steps = 0 and no total announced: zero steps are enough for this gate alone
    assert (got["steps-logged"].status, got["steps-logged"].threshold) == (GateStatus.PASS, ">= 0")
    assert (got["metrics-finite"].status, got["metrics-finite"].value) == (GateStatus.FAIL, 0)
    assert not verdict(gates)


@pytest.mark.parametrize(("seconds", "status"), [(10.0, GateStatus.PASS), (10.04, GateStatus.FAIL)])
def test_the_first_step_bar_includes_its_boundary(seconds: float, status: GateStatus) -> None:
    """Steps pass, so the first-step gate's own verdict shows (not one left over from another gate)."""
    gates = by_name(evaluate(0, scan_of([0.1] * 3), Gates(min_steps=3, first_step_max_s=10), seconds))
    assert gates["steps-logged"].status is GateStatus.PASS
    assert gates["time-to-first-step"].status is status and gates["time-to-first-step"].value == round(seconds, 1)


def test_gate_values_are_rounded_for_the_report() -> None:
    gates = Gates(learning_metric="critic/score/mean", learning_window=1, learning_min_gain=0.1)
    got = by_name(evaluate(0, scan_of([0.1, 0.323456]), gates, 12.345))
    assert got["time-to-first-step"].value == 12.3 and got["learning"].value == 0.2235
