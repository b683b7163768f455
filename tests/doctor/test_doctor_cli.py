"""`patchctl doctor` through click: a file, stdin, JSON, compressed logs, no match, bad and binary input."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from excerpts import CLEAN, EXCERPTS

from patchctl.cli.main import cli
from patchctl.doctor import load_signatures


def test_log_file_table(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(CLEAN + EXCERPTS["vllm-backend-not-registered"] + EXCERPTS["triton-cannot-find-lcuda"])
    result = CliRunner().invoke(cli, ["doctor", str(log)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert (
        "1. root cause: vLLM attention backend named but not implemented [vllm-backend-not-registered]  (line 10)"
        in out
    )
    assert "2. also: Triton cannot link against libcuda [triton-cannot-find-lcuda]" in out
    assert "env:      VLLM_ATTENTION_BACKEND=FLASH_ATTN" in out
    assert "patch:    uky/triton-cuda-stubs" in out
    assert out.endswith(
        f"doctor: root cause: vLLM attention backend named but not implemented "
        f"[vllm-backend-not-registered] at line 10 of {log} (14 lines); 1 more finding(s) below it\n"
    )


def test_the_final_line_names_the_root_cause_not_the_noise_before_it(tmp_path):
    """A whole-run log of our own vLLM run (390 lines of warnings and config) ending in vLLM's
    KV-cache error, with Ray's 'worker died' printed first: the root cause is the KV cache."""
    import corpus_score

    (entry,) = [e for e in corpus_score.load() if e.name == "069-run-h100-worker-died-printed-before-kv-cache"]
    log = tmp_path / "train.log"
    log.write_text(entry.text)
    result = CliRunner().invoke(cli, ["doctor", str(log)])
    assert result.exit_code == 0, result.output
    last = result.output.splitlines()[-1]
    assert last.startswith(
        "doctor: root cause: vLLM has no GPU memory left for the KV cache [vllm-kv-cache-no-memory] at line 63 of"
    )
    assert (
        "2. also: A Ray worker died (the message only points at the real failure) [ray-worker-died]  (line 61)"
        in result.output
    )
    doc = json.loads(CliRunner().invoke(cli, ["doctor", "--json", str(log)]).output)
    assert doc["root"] == "vllm-kv-cache-no-memory" and doc["matches"][0]["line"] == 63


def test_a_possible_finding_is_worded_as_one(tmp_path):
    result = CliRunner().invoke(
        cli, ["doctor", "-"], input="AttributeError: 'EngineArgs' object has no attribute 'disable_log_requests'\n"
    )
    assert "1. root cause: possibly vLLM v1 renamed disable_log_requests [vllm-disable-log-requests]" in result.output


def test_a_version_mismatch_shows_the_versions_and_the_pins_of_a_tree(tmp_path):
    (tmp_path / "PKG-INFO").write_text("Name: verl\nRequires-Dist: torch==2.6.0\nRequires-Dist: tensordict<=0.6.2\n")
    result = CliRunner().invoke(
        cli,
        ["doctor", "--verl", str(tmp_path), "-"],
        input=("tensordict 0.6.2 requires torch>=2.5.0, but you have torch 2.4.0+cu124 which is incompatible.\n"),
    )
    assert "   seen:     tensordict 0.6.2; torch 2.4.0+cu124\n" in result.output
    assert f"   pins:     torch==2.6.0, tensordict<=0.6.2 ({tmp_path / 'PKG-INFO'})\n" in result.output


def test_stdin_json():
    text = EXCERPTS["ray-register-worker"] + EXCERPTS["slow-model-loading"]
    result = CliRunner().invoke(cli, ["doctor", "--json"], input=text)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    ids = [m["id"] for m in doc["matches"]]
    assert ids == ["ray-register-worker", "slow-model-loading"] and doc["source"] == "<stdin>"
    assert doc["matches"][1]["resolves"]["override"] == [
        "actor_rollout_ref.rollout.load_format=safetensors",
        "actor_rollout_ref.rollout.enforce_eager=True",
    ]


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
    assert result.exit_code == 2 and "nope.log: no such log file" in result.output
    assert "Traceback" not in result.output


def test_bad_signature_table(tmp_path):
    bad = tmp_path / "s.toml"
    bad.write_text("format = 2\nsignature = []\n")
    result = CliRunner().invoke(cli, ["doctor", "--signatures", str(bad), "-"], input="x")
    assert result.exit_code == 2 and "key 'format'" in result.output


def test_list():
    result = CliRunner().invoke(cli, ["doctor", "--list", "--json"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.output)) == len(load_signatures())


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


def _failed_run_log() -> bytes:
    return (CLEAN + EXCERPTS["cuda-out-of-memory"] + CLEAN).encode()


@pytest.mark.parametrize(
    ("compress", "name"), [(gzip.compress, "gzip"), (bz2.compress, "bzip2"), (lzma.compress, "xz")]
)
def test_compressed_logs_are_read_transparently(tmp_path, compress, name):
    log = tmp_path / "train.log.gz"
    log.write_bytes(compress(_failed_run_log()))
    result = CliRunner().invoke(cli, ["doctor", "--json", str(log)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert [m["id"] for m in doc["matches"]] == ["cuda-out-of-memory"] and doc["matches"][0]["first_line"] == 7
    assert doc["compression"] == name and doc["damage"] is None


def test_compressed_stdin(tmp_path):
    result = CliRunner().invoke(cli, ["doctor", "-"], input=gzip.compress(_failed_run_log()))
    assert result.exit_code == 0, result.output
    assert "[cuda-out-of-memory]" in result.output


def test_a_cut_off_gzip_log_reports_what_was_read(tmp_path):
    """A log gzipped while the node went down: the findings before the cut, and one line saying where."""
    whole = gzip.compress(_failed_run_log() + b"".join(b"step %d\n" % i for i in range(5000)))
    log = tmp_path / "train.log.gz"
    log.write_bytes(whole[: len(whole) // 2])
    result = CliRunner().invoke(cli, ["doctor", str(log)])
    assert result.exit_code == 0, result.output
    assert "[cuda-out-of-memory]" in result.stdout
    assert result.stderr.startswith(f"doctor: {log}: the gzip data is cut off or damaged after line ")
    assert result.stderr.rstrip().endswith("; the findings above are from the lines before it")


@pytest.mark.parametrize(
    "make,what",
    [
        (lambda: Path(sys.executable).resolve().read_bytes(), "an ELF executable or library"),
        (
            lambda: gzip.compress(Path(sys.executable).resolve().read_bytes()[:200_000]),
            "an ELF executable or library, gzip-compressed",
        ),
        (lambda: bytes(range(256)) * 64, "binary data"),
        (lambda: b"PK\x03\x04" + b"\x00" * 100, "a zip archive (a torch checkpoint?)"),
    ],
)
def test_a_binary_file_is_refused_in_one_line(tmp_path, make, what):
    if sys.platform != "linux" and "ELF" in what:
        pytest.skip("the interpreter is an ELF file only on Linux")
    log = tmp_path / "python3"
    log.write_bytes(make())
    result = CliRunner().invoke(cli, ["doctor", str(log)])
    assert result.exit_code == 2
    assert result.output == (
        f"error: {log}: not a text log ({what}); pass the run's log file (plain, .gz, .bz2 or .xz)\n"
    )


def test_a_binary_stdin_is_refused(tmp_path):
    result = CliRunner().invoke(cli, ["doctor", "-"], input=b"\x7fELF\x02\x01\x01" + b"\x00" * 64)
    assert result.exit_code == 2
    assert result.output == (
        "error: <stdin>: not a text log (an ELF executable or library); pass the run's log file "
        "(plain, .gz, .bz2 or .xz)\n"
    )


def test_excerpts_on_the_terminal_are_printable(tmp_path):
    log = tmp_path / "run.log"
    log.write_bytes(b"\x1b[36m(WorkerDict pid=812)\x1b[0m torch.OutOfMemoryError: CUDA out of memory.\x07\x00\n")
    result = CliRunner().invoke(cli, ["doctor", str(log)])
    assert result.exit_code == 0
    assert "log:      (WorkerDict pid=812) torch.OutOfMemoryError: CUDA out of memory.\ufffd\ufffd" in result.output
    assert not any(ord(c) < 32 and c != "\n" for c in result.output)
