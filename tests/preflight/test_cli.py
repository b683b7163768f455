"""`patchctl verify --env` through click: the CPU machine's real verdicts, a cluster config's paths,
exit codes, and the structural verify left as it was."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from patchctl.cli.main import cli
from patchctl.preflight import Context, Status, Verdict
from patchctl.preflight import engine as runner
from patchctl.preflight.base import Check
from patchctl.preflight.probe import ProbeResult


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(autouse=True)
def outside_any_tree(tmp_path, monkeypatch):
    """Run from an empty directory: a defaulted --target . then means no target."""
    monkeypatch.chdir(tmp_path)


def test_real_machine_json(tmp_path):
    result = invoke("verify", "--env", "--json")
    doc = json.loads(result.output)
    by = {c["name"]: c for c in doc["checks"]}
    assert doc["target"] is None and len(by) == 17
    assert by["python"]["status"] == "pass"
    assert by["torch"]["status"] == "fail"  # no GPU on the CPU machine
    if importlib.util.find_spec("vllm") is None:
        assert by["vllm"]["status"] == "warn" and by["vllm"]["value"].startswith("vLLM is not installed")
    if importlib.util.find_spec("ray") is None:
        assert by["ray"]["status"] == "fail" and "Ray is not installed" in by["ray"]["value"]
    assert by["patches"]["status"] == "skip" and by["data"]["status"] == "skip"
    assert all(set(c) == {"name", "title", "status", "value", "seconds", "fix"} for c in doc["checks"])
    assert all(c["fix"] for c in doc["checks"] if c["status"] in ("warn", "fail"))
    assert not any("Traceback" in c["value"] for c in doc["checks"])
    assert result.exit_code == 1 and doc["ok"] is False


def test_table_output(tmp_path):
    result = invoke("verify", "--env")
    assert result.exit_code == 1
    assert "environment preflight (no target)" in result.output
    assert "verify --env: FAILED" in result.output


def test_cluster_paths(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("train.parquet", "test.parquet", "train_tiny.parquet"):
        pq.write_table(pa.table({"prompt": [[{"role": "user", "content": "q"}]]}), data / name)
    config = tmp_path / "patchctl.toml"
    config.write_text(
        f'[clusters.gpu]\nhosts = ["node1"]\nroot = "/root/verl_Uky"\n'
        f'[clusters.gpu.paths]\nDATA_DIR = "{data}"\nMODEL_PATH = "{tmp_path / "no-model"}"\n'
    )
    result = invoke("verify", "--env", "--cluster", "gpu", "--config", str(config), "--json")
    by = {c["name"]: c for c in json.loads(result.output)["checks"]}
    assert by["data"]["status"] == "pass" and f"cluster gpu in {config}" in by["data"]["value"]
    assert by["model"]["status"] == "fail" and "no such directory" in by["model"]["value"]


def test_unknown_cluster_is_one_line(tmp_path):
    config = tmp_path / "patchctl.toml"
    config.write_text('[clusters.gpu]\nhosts = ["node1"]\nroot = "/r"\n')
    result = invoke("verify", "--env", "--cluster", "nope", "--config", str(config))
    assert result.exit_code == 2 and "no cluster named 'nope'" in result.output and "Traceback" not in result.output


class Warns(Check):
    name, title = "warns", "warns"

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        return Verdict(Status.WARN, "a warning", "do something")


def test_exit_zero_when_nothing_failed(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "CHECKS", {"warns": Warns()})
    result = invoke("verify", "--env", "--json")
    assert result.exit_code == 0 and json.loads(result.output)["counts"]["warn"] == 1


def test_explicit_target_that_is_not_verl(tmp_path):
    result = invoke("verify", "--env", "--target", str(tmp_path))
    assert result.exit_code == 2 and "not a verl tree" in result.output


def test_structural_verify_unchanged(tmp_path):
    result = invoke("verify", "--target", str(tmp_path))
    assert result.exit_code == 2 and "not a verl tree" in result.output
