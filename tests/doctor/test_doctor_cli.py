"""`patchctl doctor` through click: a file, stdin, JSON, no match, bad input."""

from __future__ import annotations

import json

from click.testing import CliRunner
from excerpts import CLEAN, EXCERPTS

from patchctl.cli.main import cli


def test_log_file_table(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(CLEAN + EXCERPTS["vllm-backend-not-registered"] + EXCERPTS["triton-cannot-find-lcuda"])
    result = CliRunner().invoke(cli, ["doctor", str(log)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "1. vLLM attention backend named but not implemented [vllm-backend-not-registered]" in out
    assert "env:      VLLM_ATTENTION_BACKEND=FLASH_ATTN" in out
    assert "patch:    uky/triton-cuda-stubs" in out
    assert "doctor: 2 known failure(s) in" in out


def test_stdin_json():
    text = EXCERPTS["ray-register-worker"] + EXCERPTS["slow-model-loading"]
    result = CliRunner().invoke(cli, ["doctor", "--json"], input=text)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    ids = [m["id"] for m in doc["matches"]]
    assert ids == ["ray-register-worker", "slow-model-loading"] and doc["source"] == "<stdin>"
    assert doc["matches"][1]["resolves"]["override"] == ["actor_rollout_ref.rollout.load_format=safetensors",
                                                         "actor_rollout_ref.rollout.enforce_eager=True"]


def test_dash_reads_stdin():
    result = CliRunner().invoke(cli, ["doctor", "-"], input=EXCERPTS["duplicate-gpu"])
    assert result.exit_code == 0, result.output
    assert "[duplicate-gpu]" in result.output


def test_no_match(tmp_path):
    log = tmp_path / "ok.log"
    log.write_text(CLEAN)
    result = CliRunner().invoke(cli, ["doctor", str(log)])
    assert result.exit_code == 0 and "no known failure signature in 6 lines" in result.output


def test_binary_garbage_does_not_crash(tmp_path):
    log = tmp_path / "bin.log"
    log.write_bytes(b"\xff\xfe\x00garbage\n" + EXCERPTS["too-many-open-files"].encode())
    result = CliRunner().invoke(cli, ["doctor", str(log)])
    assert result.exit_code == 0 and "[too-many-open-files]" in result.output


def test_missing_file_is_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["doctor", str(tmp_path / "nope.log")])
    assert result.exit_code == 1 and "nope.log: no such log file" in result.output
    assert "Traceback" not in result.output


def test_bad_signature_table(tmp_path):
    bad = tmp_path / "s.toml"
    bad.write_text("format = 2\nsignature = []\n")
    result = CliRunner().invoke(cli, ["doctor", "--signatures", str(bad), "-"], input="x")
    assert result.exit_code == 1 and "key 'format'" in result.output


def test_list():
    result = CliRunner().invoke(cli, ["doctor", "--list", "--json"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.output)) == len(EXCERPTS)


def test_large_log_streams(tmp_path):
    log = tmp_path / "big.log"
    with log.open("w") as f:
        for i in range(200_000):
            f.write(f"(TaskRunner pid=1) step:{i} - actor/pg_loss:0.01\n")
        f.write(EXCERPTS["cuda-out-of-memory"])
    result = CliRunner().invoke(cli, ["doctor", "--json", str(log)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert [m["id"] for m in doc["matches"]] == ["cuda-out-of-memory"] and doc["matches"][0]["first_line"] == 200_001
