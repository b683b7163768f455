"""Issue 37, requirement 5: `doctor --healthy OLD` names what only the failed run has.

The healthy runs are our own GPU runs' logs and reports (docs/validation). Each failed run is a copy
of a healthy one with known differences planted (an OOM with its traceback, an extra warning, a
changed setting, a changed vLLM version, the run cut short); every test asserts that each planted
difference is named, in its phase, and that nothing else is."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from click.testing import CliRunner

from patchctl.cli.main import cli
from patchctl.doctor.compare import Line, compare, read_log, read_run, template, timestamp

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "docs/validation"
VLLM_LOG = RUNS / "vllm-smoke/runs/healthy-1-train-excerpt.log"
H100_LOG = RUNS / "smoke-h100-train-excerpt.log"
HEALTHY_REPORT = RUNS / "vllm-smoke/runs2/a-healthy-1-report.json"
LR_ZERO_REPORT = RUNS / "vllm-smoke/runs2/a-lr-zero-report.json"

OOM = "(WorkerDict pid=2048) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
TRACEBACK = "(WorkerDict pid=2048) Traceback (most recent call last):\n"
WARNING = "(TaskRunnerV1 pid=1800) WARNING:2026-11-24 10:38:05,120:loss scale reduced, skipping the step\n"


def _failed_vllm_run(tmp_path: Path) -> Path:
    """The healthy vLLM log with a warning 23 s into training, an OOM and its traceback after step
    12 (where the run then ends), enforce_eager flipped and vLLM 0.24.0 -> 0.25.0."""
    lines = VLLM_LOG.read_text(encoding="utf-8").splitlines(keepends=True)
    out = []
    for line in lines:
        line = line.replace("enforce_eager=True", "enforce_eager=False").replace("(v0.24.0)", "(v0.25.0)")
        out.append(line)
        if "step:3 -" in line:
            out.append(WARNING)
        if "step:12 -" in line:
            out += [TRACEBACK, OOM]
            break
    failed = tmp_path / "failed.log"
    failed.write_text("".join(out), encoding="utf-8")
    return failed


def test_a_healthy_log_compared_with_itself_names_nothing():
    for log in (VLLM_LOG, H100_LOG, RUNS / "multinode/two-nodes/train-excerpt.log"):
        c = compare(read_run(log), read_run(log))
        assert not c.differs, c.to_json()


def test_each_planted_difference_is_named_in_its_phase_and_nothing_else(tmp_path):
    c = compare(read_run(_failed_vllm_run(tmp_path)), read_run(VLLM_LOG))
    shown = [(w.number, w.text, w.where()) for w in c.warnings]
    assert shown == [
        (11, WARNING.strip(), "training +23s"),
        (21, TRACEBACK.strip(), "training +23s"),
        (22, OOM.strip(), "training +23s"),
    ]
    assert c.others_total == 0 and c.others == []
    assert c.settings == [("enforce_eager", "True", "False")]
    assert c.versions == [("vllm", "0.24.0", "0.25.0")]
    assert c.missing_phases == []  # this healthy excerpt, too, ends in training


def test_a_run_cut_short_names_the_phases_it_never_reached(tmp_path):
    lines = H100_LOG.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if "step:20 -" in line)
    failed = tmp_path / "cut.log"
    failed.write_text("".join(lines[: cut + 1]) + OOM, encoding="utf-8")
    c = compare(read_run(failed), read_run(H100_LOG))
    assert c.phases[0] == ["startup", "ray", "workers", "training"]
    assert c.missing_phases == ["teardown"]
    assert c.to_json()["phases"] == {
        "failed": ["startup", "ray", "workers", "training"],
        "healthy": ["startup", "ray", "workers", "training", "teardown"],
        "not_reached": ["teardown"],
    }
    assert [(w.number, w.phase) for w in c.warnings] == [(cut + 2, "training")]
    assert (c.others_total, c.settings, c.versions) == (0, [], [])


def test_lines_differing_only_in_volatile_parts_share_a_template():
    a = "\x1b[36m(WorkerDict pid=1469)\x1b[0m step:3 "
    a += "- actor/lr:2e-05 - id 3f9a0c1b77 at 0x7f3a2c Progress:  8%|▊ | 3/40"
    b = "(WorkerDict pid=88) step:17 - actor/lr:0.001 - id 0be11a92f4 at 0x55aa01 Progress: 45%|████▌ | 18/40"
    assert template(a) == template(b)
    assert template("step:3 - actor/loss:nan") != template("step:3 - actor/loss:0.5")


def test_the_warnings_and_lines_listed_are_capped_with_a_total(tmp_path):
    failed = tmp_path / "many.log"
    failed.write_text(
        VLLM_LOG.read_text(encoding="utf-8")
        + "".join(f"WARNING: unknown key k{chr(97 + i % 26)}{chr(97 + i // 26)}\n" for i in range(30)),
        encoding="utf-8",
    )
    c = compare(read_run(failed), read_run(VLLM_LOG))
    assert (c.warnings_total, len(c.warnings)) == (30, 20)
    assert c.warnings[0].text == "WARNING: unknown key kaa"


def test_a_report_compared_with_a_healthy_report_names_its_setting_and_metrics():
    c = compare(read_run(LR_ZERO_REPORT), read_run(HEALTHY_REPORT))
    assert c.settings == [("actor_rollout_ref.actor.optim.lr", "2e-3", "0")]
    assert c.versions == []
    metrics = dict((m, (h, f)) for m, h, f in c.metrics)
    assert metrics["reward"] == (
        compare(read_run(HEALTHY_REPORT), read_run(HEALTHY_REPORT)).metrics[0][1],
        compare(read_run(LR_ZERO_REPORT), read_run(LR_ZERO_REPORT)).metrics[0][1],
    )
    assert metrics["reward"][0] > 2 * metrics["reward"][1]  # the healthy run learned, the lr=0 one did not
    assert not compare(read_run(HEALTHY_REPORT), read_run(HEALTHY_REPORT)).differs


def test_cli_prints_each_difference_within_80_columns_and_json_gives_the_same(tmp_path):
    failed = _failed_vllm_run(tmp_path)
    result = CliRunner().invoke(cli, ["doctor", str(failed), "--healthy", str(VLLM_LOG)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert all(len(line) <= 80 or len(line.split()) == 2 for line in out.splitlines()), out  # a path stays whole
    assert "warnings and errors only in the failed run (3):" in out
    assert (
        "     22 [training +23s] (WorkerDict pid=2048) torch.OutOfMemoryError: CUDA out\n"
        "                        of memory. Tried to allocate 2.00 GiB\n"
    ) in out
    assert "  enforce_eager: True (healthy) -> False (failed)" in out
    assert "  vllm: 0.24.0 (healthy) -> 0.25.0 (failed)" in out
    assert "lines only in the failed run" not in out and "no difference" not in out
    doc = json.loads(CliRunner().invoke(cli, ["doctor", str(failed), "--healthy", str(VLLM_LOG), "--json"]).output)
    assert doc["warnings_only_in_failed"]["total"] == 3
    assert (
        doc["warnings_only_in_failed"]["shown"][2]["seconds_into_phase"] == 23.12
    )  # 10:37:42 (step 1) to 10:38:05,120
    assert doc["settings"] == [{"key": "enforce_eager", "healthy": "True", "failed": "False"}]
    assert doc["versions"] == [{"key": "vllm", "healthy": "0.24.0", "failed": "0.25.0"}]
    same = CliRunner().invoke(cli, ["doctor", str(VLLM_LOG), "--healthy", str(VLLM_LOG)], env={"COLUMNS": "80"})
    assert same.exit_code == 0 and "doctor: no difference" in same.output


def test_a_healthy_file_that_is_not_a_log_is_one_line_exit_2(tmp_path):
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\x7fELF" + bytes(200))
    result = CliRunner().invoke(cli, ["doctor", str(VLLM_LOG), "--healthy", str(binary)])
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0 and "not a text log" in result.output
    missing = CliRunner().invoke(cli, ["doctor", str(VLLM_LOG), "--healthy", str(tmp_path / "nope.log")])
    assert missing.exit_code == 2


def test_a_log_compared_with_a_report_compares_only_what_both_show(tmp_path):
    """The report's command has ~50 overrides and 14 packages the log never prints: none of them is
    a difference; the vLLM version both show is compared."""
    c = compare(read_run(_failed_vllm_run(tmp_path)), read_run(HEALTHY_REPORT))
    assert c.settings == []
    assert c.versions == [("vllm", "0.24.0", "0.25.0")]
    assert (c.warnings_total, c.others_total) == (0, 0)  # a report keeps no lines to compare with


def test_control_characters_of_a_log_reach_the_terminal_escaped(tmp_path):
    """A log is untrusted: an OSC sequence (which retitles a terminal) in a line or a setting's value
    is printed escaped, never raw."""
    failed = tmp_path / "evil.log"
    failed.write_text(
        VLLM_LOG.read_text(encoding="utf-8") + "ERROR \x1b]0;owned\x07 here\nmode_flag='\x1b]0;x\x07'\n",
        encoding="utf-8",
    )
    out = CliRunner().invoke(cli, ["doctor", str(failed), "--healthy", str(VLLM_LOG)]).output
    assert "\x1b" not in out and "\x07" not in out
    assert "ERROR \\033]0;owned\\a here" in out and "mode_flag: (not set) (healthy) -> '\\033]0;x\\a' (failed)" in out


def test_a_word_with_digits_keeps_its_letters_and_an_id_is_one_mark():
    assert (
        template("rank3 on layer12 of Qwen2, req 1a2b3c, obj 0xfe, 12ab")
        == "rank# on layer# of Qwen#, req #, obj #, #ab"
    )
    assert template("deadbeef42 cafe1") == "# cafe#"
    assert (
        template("a facade of decade") == "a facade of decade"
    )  # hex letters without a digit are a word  # a hex id of 6 or more characters is one mark


def test_times_are_read_in_ray_glog_and_vllm_form_after_a_process_prefix():
    iso = timestamp("(TaskRunner pid=1344) WARNING:2026-11-21 06:29:26,790:Waiting", 2000)
    assert iso == (datetime(2026, 11, 21, 6, 29, 26).timestamp() + 0.79, 2026)
    glog = timestamp("(WorkerDict pid=1490) [W1121 06:29:38.771919740 socket.cpp:204]", 2026)
    assert glog == (datetime(2026, 11, 21, 6, 29, 38).timestamp() + 0.771919, 2026)
    vllm = timestamp("(vLLMHttpServer pid=2186) (EngineCore pid=2279) INFO 11-24 10:37:25 [core.py:114]", 2026)
    assert vllm == (datetime(2026, 11, 24, 10, 37, 25).timestamp(), 2026)
    assert timestamp("2026-13-45 06:29:26,790 not a date", 2000) is None
    assert timestamp("step:3 - no time here", 2000) is None
    feb29 = read_log(["I0229 10:00:00.000 a\n", "I0229 10:00:05.250 b\n"], "x")  # no year: a leap one is assumed
    assert [line.where() for line in feb29.lines.values()] == ["startup +0s", "startup +5s"]


def test_seconds_count_from_the_phase_start_and_a_validation_returns_to_training():
    log = [
        "2026-11-21 05:57:30,000 INFO starting\n",
        "2026-11-21 05:57:35,500 INFO still starting\n",
        "2026-11-21 05:57:37,000 INFO worker.py:1951 -- Connected to Ray cluster.\n",
        "(TaskRunner pid=1) step:1 - actor/lr:0.001\n",
        "(TaskRunner pid=1) step:1 - val-core/score:0.5\n",
        "2026-11-21 05:57:39,000 validating\n",
        "(TaskRunner pid=1) step:2 - actor/lr:0.001\n",
        "(TaskRunner pid=1) after step 2\n",
        "(TaskRunner pid=1) step:3 - actor/lr:0.001\n",
        "checkpoint_dir=/tmp/a-run-of-its-own use_remove_padding=True trainer.nnodes=1\n",
    ]
    run = read_log(log, "x")
    where = {line.number: line.where() for line in run.lines.values()}
    assert where[2] == "startup +6s" and where[3] == "ray +0s"
    assert where[6] == "validation +2s" and where[8] == "training +0s"
    assert run.phases == ["startup", "ray", "training", "validation"]
    assert run.lines[template(log[3])].count == 3  # steps 1, 2 and 3: one template
    assert run.settings == {
        "use_remove_padding": "True",
        "trainer.nnodes": "1",
    }  # a directory is new every run: never compared


def test_seconds_in_json_are_rounded_to_milliseconds():
    assert Line(1, "x", "ray", 1.23456, False).to_json()["seconds_into_phase"] == 1.235


def test_a_report_with_other_settings_and_versions_names_each(tmp_path):
    doc = json.loads(HEALTHY_REPORT.read_text(encoding="utf-8"))
    doc["command"] = [a.replace("rollout.n=4", "rollout.n=8") for a in doc["command"]]
    doc["settings"]["ROLLOUT"] = {"value": "sglang", "source": "the profile"}
    doc["packages"]["torch"] = "2.10.0"
    doc["tree"]["version"] = "0.8.0"
    doc["steps"] = doc["steps"][:15]
    for step in doc["steps"]:
        del step["metrics"]["actor/entropy"]
    failed = tmp_path / "report.json"
    failed.write_text(json.dumps(doc), encoding="utf-8")
    c = compare(read_run(tmp_path), read_run(HEALTHY_REPORT))  # a run directory holding report.json
    assert c.settings == [("actor_rollout_ref.rollout.n", "4", "8"), ("ROLLOUT", None, "sglang")]
    assert c.versions == [("torch", "2.11.0", "2.10.0"), ("verl", "0.9.1", "0.8.0")]
    assert c.to_json()["steps"] == {"healthy": 20, "failed": 15}
    entropy = [m for m in c.metrics if m[0] == "entropy"]
    assert len(entropy) == 1 and entropy[0][1] is not None and entropy[0][2] is None  # shown as "-"


def test_versions_a_log_prints_are_compared():
    healthy = read_log(["torch 2.6.0+cu124\n", "vllm==0.8.3\n"], "healthy")
    failed = read_log(["torch 2.7.0\n", "vllm==0.8.3\n"], "failed")
    assert compare(failed, healthy).versions == [("torch", "2.6.0+cu124", "2.7.0")]
