"""Issue 41 req 4: nothing ``train`` writes into its run directory goes through a link already there.

A run directory named with ``--out`` may hold links under the names train writes (the logs, the
report and its plot) and in place of the folders it fills (``assets/``, ``codehook/``). Each
link is replaced by train's own file or folder; what it pointed at keeps its bytes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchctl.cli.main import cli
from patchctl.train import codehook, modelinfo

FILES = ("train.log", "ray-head.log", "report.json", "report.png")


def plant(run: Path, outside: Path, names: tuple[str, ...]) -> dict[Path, bytes]:
    """``run/NAME -> outside/NAME`` for each name; returns every file outside with its bytes."""
    run.mkdir(parents=True, exist_ok=True)
    outside.mkdir(parents=True, exist_ok=True)
    for name in names:
        (outside / name).write_bytes(f"the user's own {name}\n".encode())
        (run / name).symlink_to(outside / name)
    return {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}


def test_a_smoke_run_replaces_every_link_in_its_run_directory(tree: Path, tmp_path: Path) -> None:
    pytest.importorskip("tokenizers")
    pytest.importorskip("pyarrow")
    run, outside = tmp_path / "run", tmp_path / "outside"
    (outside / "assets" / "model").mkdir(parents=True)
    (outside / "assets" / "model" / "config.json").write_text("the user's model config\n")
    (run / "assets").parent.mkdir(parents=True)
    (run / "assets").symlink_to(outside / "assets", target_is_directory=True)
    kept = plant(run, outside, FILES)
    done = CliRunner().invoke(cli, ["train", "--target", str(tree), "--out", str(run)], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == kept, "a file outside was written"
    for name in FILES:
        assert (run / name).is_file() and not (run / name).is_symlink(), name
    assert not (run / "assets").is_symlink() and (run / "assets" / "model" / "config.json").is_file()
    assert "step:40" in (run / "train.log").read_text() and '"verdict": "pass"' in (run / "report.json").read_text()


def test_the_code_hook_folder_is_made_afresh_not_through_a_link(tmp_path: Path) -> None:
    run, outside = tmp_path / "run", tmp_path / "outside"
    (outside / "records").mkdir(parents=True)
    (outside / "records" / "mine.jsonl").write_text("the user's\n")
    (outside / "sitecustomize.py").write_text("# the user's own\n")
    run.mkdir()
    (run / codehook.DIR_NAME).symlink_to(outside, target_is_directory=True)
    folder = codehook.install(run)
    assert (outside / "records" / "mine.jsonl").read_text() == "the user's\n"
    assert (outside / "sitecustomize.py").read_text() == "# the user's own\n"
    assert not folder.is_symlink() and (folder / "sitecustomize.py").is_file()
    assert list((folder / "records").iterdir()) == []


def test_the_model_info_log_replaces_a_link(tmp_path: Path) -> None:
    run, outside = tmp_path / "run", tmp_path / "outside"
    kept = plant(run, outside, (modelinfo.LOG_NAME,))
    warming = modelinfo.Warming(sys.executable, tmp_path / "no-model", {}, run / modelinfo.LOG_NAME)
    assert warming._child is not None
    warming._child.wait(timeout=60)
    assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == kept
    assert not (run / modelinfo.LOG_NAME).is_symlink() and (run / modelinfo.LOG_NAME).is_file()
