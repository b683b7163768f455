"""validate's terminal lines: one host prefix, one verdict prefix, no run directory that was never made."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from patchctl.cli import validate_show
from patchctl.validate.errors import HostUnreachable, Interrupted
from patchctl.validate.model import Note


def test_a_note_names_its_host_once(capsys: pytest.CaptureFixture[str]) -> None:
    validate_show.note(Note("preflight", "node1", str(HostUnreachable("node1", "preflight", "ssh: connect refused"))))
    assert capsys.readouterr().err == "preflight  node1: unreachable (ssh: connect refused)\n"


def test_a_note_about_another_host_keeps_its_text(capsys: pytest.CaptureFixture[str]) -> None:
    validate_show.note(Note("ray-up", "node1", "node10: joined"))
    assert capsys.readouterr().err == "   ray-up  node1: node10: joined\n"


def _result(run_dir: str, cause: str, verdict: str = "interrupted") -> SimpleNamespace:
    return SimpleNamespace(
        preflight=(),
        ray=None,
        trained=None,
        teardown=(),
        timings={"total": 1.0},
        run_dir=run_dir,
        fetched=(),
        comparison=None,
        insecure_ray=False,
        health=None,
        verdict=SimpleNamespace(value=verdict),
        cause=cause,
    )


def test_the_verdict_line_says_validate_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    validate_show.show(_result(str(tmp_path), str(Interrupted("preflight"))))
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == "validate: INTERRUPTED — interrupted (Ctrl-C) during preflight; what was started was stopped"


def test_a_run_directory_never_made_is_not_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    validate_show.show(_result(str(tmp_path / "never"), "node1: unreachable (x)", "fail"))
    out = capsys.readouterr().out
    assert "run directory" not in out and out.endswith("validate: FAIL — node1: unreachable (x)\n")
    validate_show.show(_result(str(tmp_path), "", "pass"))
    assert f"run directory: {tmp_path}\n" in capsys.readouterr().out
