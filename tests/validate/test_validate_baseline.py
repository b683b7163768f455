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
