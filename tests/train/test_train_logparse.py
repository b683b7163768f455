"""Parsing verl's console log, on excerpts of real logs from the GPU test machine."""

from __future__ import annotations

import math
from pathlib import Path

from patchctl.train.logparse import LogScan, parse_step, parse_value, scan_text

FIXTURES = Path(__file__).parent / "fixtures"


def test_values_as_pprint_writes_them() -> None:
    assert parse_value("np.float64(0.125)") == 0.125
    assert parse_value("np.int64(3)") == 3.0
    assert parse_value("1e-05") == 1e-05
    assert math.isnan(parse_value("nan") or 0.0)
    assert parse_value("np.float32(inf)") == math.inf
    assert parse_value("True") == 1.0
    assert parse_value("tensor([1])") is None


def test_step_line_with_ray_prefix_and_colours() -> None:
    line = "\x1b[36m(TaskRunner pid=1229)\x1b[0m step:7 - actor/pg_loss:np.float64(-0.01) - critic/score/mean:0.5"
    assert parse_step(line) == (7, {"actor/pg_loss": -0.01, "critic/score/mean": 0.5})
    assert parse_step("(TaskRunner pid=1) steps: 7") is None


def test_real_passing_run() -> None:
    scan = scan_text((FIXTURES / "smoke_h200_pass.log").read_text(encoding="utf-8"))
    assert [s.step for s in scan.steps] == list(range(1, 31))
    assert scan.total_steps == 30
    assert set(scan.moments) == {"ray_start", "task_runner", "workers_ready"}
    first = scan.steps[0].metrics
    assert {"actor/pg_loss", "critic/score/mean", "timing_s/step", "response_length/mean"} <= set(first)
    assert len(first) == 54
    assert scan.non_finite() == []
    rewards = [v for _, v in scan.series(("critic/score/mean",))]
    assert rewards[0] < 0.2 and rewards[-1] > 0.7


def test_real_failing_run() -> None:
    text = (FIXTURES / "smoke_tp_assert_fail.log").read_text(encoding="utf-8")
    scan = scan_text(text)
    assert scan.steps == []
    assert "task_runner" in scan.moments and "workers_ready" not in scan.moments
    assert "rollout world_size: 1 is not divisible by infer_tp: 2" in text


def test_times_are_kept_when_fed_live() -> None:
    scan = LogScan()
    scan.feed("2026 INFO worker.py:1 -- Started a local Ray instance.", 3.5)
    step = scan.feed("(TaskRunner pid=1) step:1 - critic/score/mean:0.1", 20.0)
    assert scan.moments["ray_start"] == 3.5
    assert step is not None and step.at == 20.0
    # a validation-only line is not a training step
    assert scan.feed("(TaskRunner pid=1) step:0 - val-core/x/reward/mean@1:0.0", 21.0) is None


def test_real_run_with_patchctls_ray_head() -> None:
    """The H100 run: the driver connected to the head patchctl started (no local Ray start)."""
    scan = scan_text((FIXTURES / "smoke_h100_ray_head_pass.log").read_text(encoding="utf-8"))
    assert [s.step for s in scan.steps] == list(range(1, 41))
    assert scan.total_steps == 40
    assert set(scan.moments) == {"ray_start", "task_runner", "workers_ready"}
    assert all(len(s.metrics) == 54 for s in scan.steps)
    rewards = [v for _, v in scan.series(("critic/score/mean",))]
    assert sum(rewards[-5:]) / 5 - sum(rewards[:5]) / 5 > 0.6
