"""``validate REPORT --baseline OLD`` (issue 40 req 3): the verdict against a reference run, per step
and metric, on the committed smoke-vllm reports of the H100 runs C and D (docs/validation/vllm-smoke)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from patchctl.cli.main import cli

RUNS = Path(__file__).resolve().parents[2] / "docs" / "validation" / "vllm-smoke" / "runs3"
HEALTHY = ("c-healthy-1", "c-healthy-2", "c-healthy-3", "d-healthy-1", "d-healthy-2", "d-healthy-3")


def _band(tmp_path: Path) -> Path:
    """The six healthy runs as run folders, the layout a user keeps them in."""
    for name in HEALTHY:
        (tmp_path / "healthy" / name).mkdir(parents=True)
        shutil.copy(RUNS / f"{name}-report.json", tmp_path / "healthy" / name / "report.json")
    return tmp_path / "healthy"


def _verdict(report: str, baseline: Path) -> tuple[int, dict]:
    done = CliRunner().invoke(
        cli, ["validate", str(RUNS / f"{report}-report.json"), "--baseline", str(baseline), "--json"]
    )
    return done.exit_code, json.loads(done.output)


def test_a_run_against_itself_is_the_same() -> None:
    code, doc = _verdict("c-healthy-1", RUNS / "c-healthy-1-report.json")
    assert code == 0 and doc["verdict"] == "same" and doc["values_compared"] == 208, doc


def test_a_healthy_reference_run_lies_within_the_band_of_the_healthy_runs(tmp_path: Path) -> None:
    code, doc = _verdict("d-healthy-3", _band(tmp_path))
    assert code == 0 and doc["verdict"] == "within band" and doc["references"] == 6, doc


def test_a_skipped_optimizer_step_differs_naming_the_metric_and_the_step(tmp_path: Path) -> None:
    """opt-skip (update-applied catches it too): step 1's grad norm is already outside what the six
    healthy runs spanned, widened by half their spread on each side."""
    code, doc = _verdict("c-opt-skip", _band(tmp_path))
    assert code == 1 and (doc["verdict"], doc["metric"], doc["step"]) == ("differs", "actor/grad_norm", 1), doc
    lo, hi = doc["band"]
    assert not lo <= doc["value"] <= hi


def test_an_unreadable_baseline_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = CliRunner().invoke(
        cli, ["validate", str(RUNS / "c-healthy-1-report.json"), "--baseline", str(tmp_path / "empty")]
    )
    assert done.exit_code == 2 and str(tmp_path / "empty") in done.output and "no report.json" in done.output, (
        done.output
    )


REPRO = Path(__file__).resolve().parents[2] / "docs" / "validation" / "repro"


def test_reproducible_h200_reruns_are_the_same_and_a_run_without_the_settings_differs_at_step_1() -> None:
    """The five healthy smoke-vllm runs with the reproducibility settings (docs/validation/repro/runs)
    as the baseline: one of them is ``same`` on all 208 values; the same stack's healthy run without
    the settings, which every absolute gate passed, ``differs`` at step 1."""
    runs = REPRO / "runs"
    done = CliRunner().invoke(
        cli, ["validate", str(runs / "healthy-10-report.json"), "--baseline", str(runs), "--json"]
    )
    doc = json.loads(done.output)
    assert done.exit_code == 0 and (doc["verdict"], doc["values_compared"], doc["references"]) == ("same", 208, 5)
    old = REPRO.parent / "weights-match" / "healthy-1-report.json"
    assert json.loads(old.read_text())["verdict"] == "pass"
    done = CliRunner().invoke(cli, ["validate", str(old), "--baseline", str(runs), "--json"])
    doc = json.loads(done.output)
    assert done.exit_code == 1 and (doc["verdict"], doc["metric"], doc["step"]) == ("differs", "actor/entropy", 1)
    assert doc["band"][0] == doc["band"][1]  # bitwise reruns: the band is one value


def test_a_reference_that_stopped_early_does_not_shrink_the_comparison(tmp_path: Path) -> None:
    """healthy-9 logged 3 steps before it was stopped: beside the five complete runs, the new run is
    still judged on all 16 steps, and a run that left them at step 2 (healthy-8) still differs there."""
    refs = tmp_path / "refs"
    refs.mkdir()
    for f in (REPRO / "runs").glob("*-report.json"):
        if f.name != "healthy-10-report.json":
            shutil.copy(f, refs / f.name)
    shutil.copy(REPRO / "disturbed" / "healthy-9-report.json", refs / "healthy-9-report.json")
    done = CliRunner().invoke(
        cli, ["validate", str(REPRO / "runs" / "healthy-10-report.json"), "--baseline", str(refs), "--json"]
    )
    doc = json.loads(done.output)
    assert (doc["verdict"], doc["values_compared"], doc["references"]) == ("same", 208, 5), doc
    done = CliRunner().invoke(
        cli, ["validate", str(REPRO / "disturbed" / "healthy-8-report.json"), "--baseline", str(refs), "--json"]
    )
    doc = json.loads(done.output)
    assert done.exit_code == 1 and (doc["verdict"], doc["step"]) == ("differs", 2), doc


def test_h200_reruns_on_other_machines_are_the_same_and_two_broken_setups_differ_at_step_1() -> None:
    """docs/validation/repro/cross-machine: three healthy runs on two other single-H200 machines
    against the x4 machine's baseline are ``same``; a changed verl default (loss_agg_mode) and
    another trainer attention backend (sdpa), which every absolute gate passed, ``differ`` at step 1,
    and the line prints the value apart from the one-value band (sdpa is off in the 7th digit)."""
    runs, cross = REPRO / "runs", REPRO / "cross-machine"
    for name in ("xm-healthy-1", "xm-healthy-2", "xm-healthy-3"):
        done = CliRunner().invoke(cli, ["validate", str(cross / f"{name}-report.json"), "--baseline", str(runs)])
        assert done.exit_code == 0 and "baseline: same: 208 values of 5 reference run(s)" in done.output, done.output
    lines = {}
    for name in ("lossagg", "sdpa"):
        report = cross / f"{name}-report.json"
        assert json.loads(report.read_text())["verdict"] == "pass"
        done = CliRunner().invoke(cli, ["validate", str(report), "--baseline", str(runs)])
        assert done.exit_code == 1, done.output
        lines[name] = done.output.strip().splitlines()[-1]
    assert lines["lossagg"] == "baseline: differs: actor/entropy at step 1 is 3.66727, outside [3.66619, 3.66619]"
    assert lines["sdpa"] == "baseline: differs: actor/entropy at step 1 is 3.666193, outside [3.666190, 3.666190]"
