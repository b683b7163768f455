"""The ``tree`` fixture (a stand-in verl 0.5.0 tree, ``standin.py``), and no path settings leaking in."""

from __future__ import annotations

from pathlib import Path

import pytest
from standin import FIXTURE, stand_in

from patchctl.migrate.render import SETTINGS


@pytest.fixture(autouse=True)
def _no_path_settings_from_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """``train`` reads MODEL_PATH, DATA_DIR, ... from the environment: the developer's must not leak in."""
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in verl 0.5.0 tree; the trainer replays the H200 smoke log and records its argv."""
    monkeypatch.setenv("FAKE_LOG", str(FIXTURE))
    monkeypatch.setenv("FAKE_ARGV", str(tmp_path / "argv.txt"))
    return stand_in(tmp_path / "verl-0.5.0")
