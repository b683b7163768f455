"""What a command imports decides its start-up time (issue 39.13): ``verify`` of a local checkout
is measured against ``grep -rn`` and must not load the release and archive machinery (tarfile,
zipfile, lzma's archive reader, the index client), the config reader or the journal recovery,
which only a ``verl==X`` target, a target given by name or an interrupted change needs.

Each command runs as a user runs it, a fresh ``python -X importtime -m patchctl``, and the test
reads the modules it imported from that report. Timings are the benchmark's business
(benchmarks/bench_core.py); this only keeps an import from creeping back to the top of a module.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import patchctl

SRC = Path(patchctl.__file__).resolve().parent.parent

#: modules a command on a local checkout has no use for: what they cost, and who needs them
NOT_FOR_A_CHECKOUT = {
    "patchctl.archive": "unpacking a release (verl==X targets)",
    "tarfile": "unpacking a release",
    "patchctl.pypi": "downloading a release",
    "patchctl.progress": "a download's or unpack's progress line",
    "patchctl.config": "a target given by name (the config's [targets])",
    "patchctl.recovery": "a tree with an interrupted change",
    "secrets": "a journal's name (a command that writes)",
}


def imported(*args: str, cwd: Path) -> set[str]:
    """The modules a fresh ``patchctl ARGS`` imported, by ``python -X importtime``'s report."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "patchctl", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    names = {m.group(1) for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", done.stderr, re.M)}
    assert "patchctl.cli.main" in names, done.stderr[-2000:]  # the report was read
    return names


@pytest.fixture
def checkout(release_tree: Callable[[str], Path]) -> Path:
    return release_tree("0.6.1")


@pytest.mark.parametrize("output", [[], ["--json"]])
def test_verify_of_a_checkout_loads_no_release_machinery(checkout: Path, output: list[str]) -> None:
    names = imported("verify", "--target", str(checkout), *output, cwd=checkout)
    loaded = {name: why for name, why in NOT_FOR_A_CHECKOUT.items() if name in names}
    assert not loaded, f"verify of a local checkout imported modules only these need: {loaded}"


def test_apply_dry_run_of_a_checkout_loads_no_release_machinery(checkout: Path) -> None:
    names = imported("apply", "--dry-run", "--json", cwd=checkout)
    for name in ("patchctl.archive", "tarfile", "patchctl.pypi", "patchctl.config", "patchctl.recovery"):
        assert name not in names, f"apply --dry-run of a local checkout imported {name}"
