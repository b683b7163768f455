"""The load check remembers the texts it saw load (issue 39.13): a verify compiled each patched
Python file anew at every run, a tenth of its instructions on uky. Only the verdict "it loads" is
kept, as an empty file named by a hash of the text, its type and the exact Python."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from patchctl.patchsets import loads

#: a Python text long enough to be remembered
GOOD = "".join(f"def f{n}(x):\n    return x + {n}\n\n" for n in range(400))
BROKEN = GOOD + "def broken(:\n    pass\n"


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """The texts the Python loader really compiled, with a cache of this test's own."""
    monkeypatch.setenv("PATCHCTL_CACHE", str(tmp_path / "cache"))
    ran: list[str] = []
    real: Callable[[str, str], tuple[int | None, str | None]] = loads._LOADERS["Python"]

    def python(text: str, path: str) -> tuple[int | None, str | None]:
        ran.append(path)
        return real(text, path)

    monkeypatch.setitem(loads._LOADERS, "Python", python)
    return ran


def test_a_text_seen_to_load_is_not_compiled_again(counted: list[str]) -> None:
    assert loads.loads("a.py", GOOD) is None
    assert loads.loads("b.py", GOOD) is None  # the same text, wherever it is
    assert counted == ["a.py"]
    assert len(os.listdir(loads.seen_dir())) == 1


def test_a_text_that_does_not_load_is_asked_every_time(counted: list[str]) -> None:
    for _ in range(2):
        problem = loads.loads("a.py", BROKEN)
        assert problem is not None and problem.line == 1201
    assert counted == ["a.py", "a.py"]
    assert not os.path.exists(loads.seen_dir()) or not os.listdir(loads.seen_dir())


def test_a_changed_text_is_compiled_again(counted: list[str]) -> None:
    assert loads.loads("a.py", GOOD) is None
    assert loads.loads("a.py", BROKEN) is not None


def test_another_python_compiles_it_again(counted: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """What compiles is the compiler's say: a text seen by one Python is checked again by another."""
    assert loads.loads("a.py", GOOD) is None
    monkeypatch.setattr(sys, "version", "3.99.0 (elsewhere)")
    assert loads.loads("a.py", GOOD) is None
    assert counted == ["a.py", "a.py"]


def test_a_short_text_is_not_remembered(counted: list[str]) -> None:
    for _ in range(2):
        assert loads.loads("a.py", "x = 1\n") is None
    assert counted == ["a.py", "a.py"]


def test_a_cache_that_cannot_be_written_changes_no_verdict(
    counted: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder\n")
    monkeypatch.setenv("PATCHCTL_CACHE", str(blocked))
    for _ in range(2):
        assert loads.loads("a.py", GOOD) is None
        assert loads.loads("a.py", BROKEN) is not None
    assert counted == ["a.py"] * 4


def test_a_text_no_encoding_can_write_is_refused_not_a_crash(counted: list[str]) -> None:
    """A lone surrogate (no file read from disk holds one) still gets the loader's word."""
    problem = loads.loads("a.py", GOOD + "x = '\ud800'\n")
    assert problem is not None and problem.what == "Python"
