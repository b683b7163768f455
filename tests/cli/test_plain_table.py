"""A table piped to a file or another program is drawn without rich when it fits (issue 39.13:
rich's import and layout were a quarter of a piped ``patchctl verify``), and must stay byte for
byte what rich draws: scripts and the snapshots read it. Each table here is drawn both ways, by
the real rich, and compared; the plain way must also have been the one taken where it applies."""

from __future__ import annotations

import random

import pytest

from patchctl.cli import render

COLUMNS = ["patch", "status", "file", "reason"]

#: tables the plain drawing takes: one-line printable ASCII that fits the width
FITTING = [
    [["a", "present", "x.py", "ok"]],
    [["vllm-enable-log-requests", "present", "verl/workers/rollout/vllm_async_server.py", "passes it, tagged"]],
    [["a", "missing", "-", ""], ["a-much-longer-patch-name", "present", "f", "reason with  two spaces"]],
    [["", "", "", ""]],
    [["a", "present", "x.py", "two\nlines, escaped"]],
    [["p", "modified", "deep/er/path/name.py", "x" * 40], ["q", "not-applicable", "-", "y"]],
]

#: tables it leaves to rich: too wide, not ASCII, spaces at a cell's ends, no rows
LEFT_TO_RICH = [
    [["a", "present", "x.py", "r" * 200]],
    [["a", "present", "données.py", "é"]],
    [["a", "present", "x.py", "trailing "]],
    [["a", "present", "x.py", " leading"]],
    [["a", "present", "x.py", "wide 表"]],
    [],
]


def drawn(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, rows: list[list[str]], rich: bool
) -> str:
    if rich:
        monkeypatch.setattr(render, "_plain_table", lambda columns, rows: None)
    render.table("verify /t (verl 0.6.1)", COLUMNS, rows, 1)
    monkeypatch.undo()
    return capsys.readouterr().out


@pytest.fixture(autouse=True)
def no_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)


@pytest.mark.parametrize("rows", FITTING)
def test_a_fitting_table_is_drawn_plain_and_exactly_as_rich_draws_it(
    rows: list[list[str]], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert render._plain_table(COLUMNS, rows) is not None
    ours = drawn(capsys, monkeypatch, rows, rich=False)
    assert ours == drawn(capsys, monkeypatch, rows, rich=True)


@pytest.mark.parametrize("rows", LEFT_TO_RICH)
def test_what_the_plain_drawing_cannot_promise_is_left_to_rich(rows: list[list[str]]) -> None:
    assert render._plain_table(COLUMNS, rows) is None


def test_colour_asked_for_goes_to_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert render._plain_table(COLUMNS, FITTING[0]) is None


def test_random_fitting_tables_match_rich(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Widths up to the edge of the screen: one column more than fits must go to rich."""
    rng = random.Random(39)
    alphabet = "abcdefghij-_./()=:0123456789 ABC[]"
    for _ in range(60):
        rows = [
            ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 45))).strip() for _ in COLUMNS]
            for _ in range(rng.randint(1, 4))
        ]
        ours = drawn(capsys, monkeypatch, rows, rich=False)
        assert ours == drawn(capsys, monkeypatch, rows, rich=True), rows
