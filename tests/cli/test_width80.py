"""Snapshots of the human-readable output at 80 columns (issue 19 req. 2), and its layout checks.

The expected text lives in tests/cli/snapshots/; PATCHCTL_UPDATE_SNAPSHOTS=1 rewrites it (review
the diff). Each snapshot is also checked for lines over 80 columns and broken table boxes, so a
layout regression fails even where someone regenerated the files without looking.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.cli.layout import problems

from patchctl.cli import env_cmd, matrix_cmd, migrate_summary, render
from patchctl.matrix.columns import Source
from patchctl.matrix.run import Column, Matrix
from patchctl.patchsets.model import Outcome, PatchResult
from patchctl.preflight.model import CheckResult, EnvReport, Status

SNAPSHOTS = Path(__file__).parent / "snapshots"
UKY = [
    "vllm-enable-log-requests",
    "triton-cuda-stubs",
    "grpo-script-standard",
    "grpo-script-debug",
    "grpo-script-fast-load",
    "test-components",
    "warmup-model",
    "create-tiny-dataset",
    "fix-triton",
    "debug-tips",
    "quick-fix",
    "git-ignore-example",
    "grpo-script-standard-env",
    "grpo-script-debug-env",
    "grpo-script-fast-load-env",
]


@pytest.fixture(autouse=True)
def _eighty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("NO_COLOR", "1")


def snapshot(name: str, text: str, exempt=lambda line: False) -> None:
    assert problems(text, 80, exempt) == []
    path = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("PATCHCTL_UPDATE_SNAPSHOTS") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def _matrix() -> Matrix:
    versions = ["0.5.0", "0.6.1", "0.7.0", "0.9.1"]
    first = {
        "0.5.0": Outcome.NOT_APPLICABLE,
        "0.6.1": Outcome.APPLIED,
        "0.7.0": Outcome.SUPERSEDED_UPSTREAM,
        "0.9.1": Outcome.SUPERSEDED_UPSTREAM,
    }
    columns = []
    for v in versions:
        results = [
            PatchResult(
                "uky",
                pid,
                first[v]
                if pid == UKY[0]
                else Outcome.ALREADY_APPLIED
                if pid == "debug-tips" and v == "0.9.1"
                else Outcome.APPLIED,
                "x.py",
                "",
            )
            for pid in UKY
        ]
        columns.append(Column(Source(v, release=v), v, tuple(results), ()))
    return Matrix(("uky",), tuple(("uky", pid) for pid in UKY), tuple(columns))


def test_matrix_of_15_patches_by_4_versions_is_15_rows_and_a_legend(capsys: pytest.CaptureFixture[str]) -> None:
    matrix_cmd._show(_matrix())
    out = capsys.readouterr().out
    snapshot("matrix-15x4", out)
    assert sum(1 for line in out.splitlines() if line.startswith("│")) == 15  # one line per patch


def test_matrix_keeps_the_full_words_where_they_fit(monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    matrix_cmd._show(_matrix())
    out = capsys.readouterr().out
    assert "superseded-upstream" in out and "legend" not in out and problems(out, 160) == []


def test_env_fixes_are_whole_lines(capsys: pytest.CaptureFixture[str]) -> None:
    fix = (
        "pip install flash-attn --no-build-isolation; or run with sdpa attention: "
        "+actor_rollout_ref.model.override_config.attn_implementation=sdpa"
    )
    report = EnvReport(
        (
            CheckResult("python", "Python", Status.PASS, "Python 3.11.7 (/usr/bin/python3)", 0.1),
            CheckResult(
                "flash_attn",
                "flash-attn",
                Status.WARN,
                "flash-attn is not installed: verl's FSDP workers load "
                "models with attn_implementation=flash_attention_2 by default",
                0.16,
                fix,
            ),
            CheckResult(
                "threads",
                "threads",
                Status.FAIL,
                "OMP_NUM_THREADS unset",
                0.0,
                "export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1",
            ),
        ),
        0.3,
    )
    env_cmd.show(report, None, None)
    out = capsys.readouterr().out
    snapshot("env", out, exempt=lambda line: line.startswith("  "))  # a fix is one line, however long
    assert f"  flash_attn (warn): {fix}\n" in out
    assert "  threads (fail): export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1\n" in out


def test_a_plain_table_with_long_cells_folds_inside_its_box(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        [
            "vllm-enable-log-requests",
            "present",
            "verl/workers/rollout/vllm_rollout/vllm_async_server.py",
            "AsyncLLM.from_vllm_config(...) at line 329 passes enable_log_requests= tagged",
        ]
    ]
    render.table(
        "verify /a/long/path/to/the/tree/that/would/not/fit/in/a/table/title/at/80/columns/verl_Uky (verl 0.6.1)",
        ["patch", "status", "file", "reason"],
        rows,
        1,
    )
    snapshot("table", capsys.readouterr().out, exempt=lambda line: line.startswith("verify /"))


def test_migrate_dry_run_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "verl").mkdir()
    for i in range(30):
        (tmp_path / "verl" / f"m{i}.py").write_text("x" * 1000)
    changes = [f"send verl/m{i}.py" for i in range(30)] + ["delete old.py", "render git_ignore.py"]
    migrate_summary.show("node1", changes, tmp_path, full=False)
    snapshot("migrate-summary", capsys.readouterr().out)


@pytest.mark.parametrize(
    "broken",
    [
        "┏━━━┳━━━┓\n┃ a ┃ b ┃\n│ c │ d│\n└───┴───┘\n",  # a row whose border moved
        "┏━━━┳━━━┓\n┃ a ┃ b ┃\n└───┴───┘ \n",  # trailing blank
        "x" * 81 + "\n",  # too wide
    ],
)
def test_the_layout_check_catches_a_broken_box(broken: str) -> None:
    assert problems(broken, 80)
    assert not problems("┏━━━┳━━━┓\n┃ a ┃ b ┃\n│ c │ d │\n└───┴───┘\n", 80)


def _verify_piped(tmp_path: Path, env: dict[str, str], stderr: int | None = None) -> str:
    import subprocess
    import sys

    from tests.faults.helpers import make_patchset, make_tree

    tree, ps = make_tree(tmp_path / "tree"), make_patchset(tmp_path / "ps", 2)
    argv = [sys.executable, "-m", "patchctl", "verify", "-t", str(tree), "-p", str(ps)]
    clean = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, text=True, env={**clean, **env}
    )
    return done.stdout


def _box(text: str) -> int:
    """The width of the first table in ``text``."""
    return next(len(line) for line in text.splitlines() if line.startswith("┏"))


def test_piped_output_honours_columns_and_the_terminal(tmp_path: Path) -> None:
    import fcntl
    import pty
    import struct
    import termios

    title = lambda line: line.startswith("verify /")  # noqa: E731 -- a path is one line, however long
    wide = _verify_piped(tmp_path / "a", {})  # no terminal anywhere: a log's 160 columns
    assert problems(wide, 160, title) == [] and _box(wide) > 80
    out = _verify_piped(tmp_path / "b", {"COLUMNS": "80"})
    assert problems(out, 80, title) == [] and "│ init-prelude" in out
    leader, terminal = pty.openpty()  # `patchctl verify | less`: stdout a pipe, stderr the 72-column terminal
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 72, 0, 0))
    try:
        out = _verify_piped(tmp_path / "c", {}, stderr=terminal)
    finally:
        os.close(terminal)
        os.close(leader)
    assert problems(out, 72, title) == [] and 60 < _box(out) <= 72


def test_migrate_report_leaves_the_reason_below_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    from patchctl.cli import migrate_run
    from patchctl.migrate.results import HostResult, HostStatus, MigrateResult
    from patchctl.migrate.source import SourceCheck

    reason = "ssh could not connect: Connection refused (port 22); check that `ssh user@10.0.0.2` works"
    hosts = (
        HostResult("node1", "/root/verl_Uky", HostStatus.OK, 1234, 45_600_000, 12.3, True),
        HostResult("user@10.0.0.2", "/root/verl_Uky", HostStatus.UNREACHABLE, 0, 0, 5.0, False, reason),
    )
    result = MigrateResult("gpu", "/home/user/src/verl_Uky", "0123456789abcdef", 1234, hosts)
    migrate_run._report(result, SourceCheck(("uky",), True, True, ()), False)
    captured = capsys.readouterr()
    snapshot("migrate-report", captured.out, exempt=lambda line: line.startswith("user@10.0.0.2: "))
    assert f"\nuser@10.0.0.2: {reason}\n" in captured.out  # whole lines, where a column would fold it
    assert f"  user@10.0.0.2: unreachable: {reason}\n" in captured.err


def test_list_wraps_why_at_the_width(capsys: pytest.CaptureFixture[str]) -> None:
    from click.testing import CliRunner

    from patchctl.cli.main import cli

    out = CliRunner().invoke(cli, ["list", "-p", "uky"], env={"COLUMNS": "80"}).output
    assert problems(out, 80, exempt=lambda line: line.startswith(("uky: ", "    target: "))) == []
    assert max(len(line) for line in out.splitlines() if line.startswith("    why: ")) > 70


#: patch ids and a conflict reason as capture made them from a real fork (TinyZero, carried from
#: its base to verl's releases in benchmarks/results/forks_detail.txt), with versions named by tag
FORK_IDS = [
    "main-ppo-module",
    "main-ppo-select-rm-score-fn",
    "ray-trainer-fit",
    "rl-dataset-read-files-and-tokenize",
    "rl-dataset-getitem",
    "tracking-init",
    "fsdp-workers-build-critic-model-optimizer",  # 41 characters, as capture named it before issue 39
]
FORK_TAGS = ["v0.2.0.post2", "v0.3.0.post1", "v0.4.1", "v0.5.0", "v0.6.1", "v0.7.0", "0.9.1"]
FORK_REASON = (
    "RLHFDataset._read_files_and_tokenize after `prompt_key = self.prompt_key`: "
    "RLHFDataset._read_files_and_tokenize has no statement `prompt_key = self.prompt_key`, "
    "`print(f'filter dataset len: {len(self.dataframe)}')` (an anchor of the patch; by syntax, not spelling)"
)


def _fork_matrix() -> Matrix:
    columns = []
    for n, tag in enumerate(FORK_TAGS):
        results = tuple(
            PatchResult(
                "tinyzero",
                pid,
                Outcome.CONFLICT if i in (0, 3) and n > 0 else Outcome.NOT_APPLICABLE if i == 1 else Outcome.APPLIED,
                "verl/utils/dataset/rl_dataset.py",
                FORK_REASON,
            )
            for i, pid in enumerate(FORK_IDS)
        )
        columns.append(Column(Source(tag, release=tag.lstrip("v")), tag, results, ()))
    return Matrix(("tinyzero",), tuple(("tinyzero", pid) for pid in FORK_IDS), tuple(columns))


def test_a_real_forks_matrix_at_80_columns(capsys: pytest.CaptureFixture[str]) -> None:
    """Long tags stood one character per line and a version list took a line per character; now
    tags become #N with a key, ids fold inside their column, and each reason folds under its line."""
    matrix_cmd._show(_fork_matrix())
    out = capsys.readouterr().out
    snapshot("matrix-fork", out)
    header = next(line for line in out.splitlines() if line.startswith("┃"))
    assert "#1" in header and "#7" in header
    assert "versions: #1 v0.2.0.post2" in out
    assert max(len(line) for line in out.splitlines()) <= 80
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert len(rows) <= 2 * len(FORK_IDS) + 2  # an id folds into two lines at most
