"""Shared fixtures: real verl source releases, downloaded once per machine and cached.

``PATCHCTL_TEST_CACHE`` (default ``~/.cache/patchctl-test``) holds the sdists and their git
trees across test runs; each test gets its own copy of a tree so nothing leaks between tests.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from realparts import require

# A suite started in the background by a non-interactive shell (`pytest ... &`) inherits SIGINT
# ignored, and every patchctl it starts inherits that too: the Ctrl-C tests (a fault-injected
# SIGINT, the migrate and demo interrupts) would then see no interrupt at all and fail. Python's
# own handler is put back, so children start with the default disposition, as from a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

#: who the tests' commits are by: a fresh machine with an empty HOME has no git identity (#10)
GIT_IDENT = {
    "GIT_AUTHOR_NAME": "patchctl-test",
    "GIT_AUTHOR_EMAIL": "test@patchctl.invalid",
    "GIT_COMMITTER_NAME": "patchctl-test",
    "GIT_COMMITTER_EMAIL": "test@patchctl.invalid",
}

RELEASES = ("0.4.1", "0.5.0", "0.6.0", "0.6.1", "0.7.0")

CACHE = Path(os.environ.get("PATCHCTL_TEST_CACHE", str(Path.home() / ".cache" / "patchctl-test")))
os.environ["PATCHCTL_CACHE"] = str(CACHE)


@pytest.fixture(scope="session", autouse=True)
def git_identity() -> Iterator[None]:
    """Every test may commit (its fixtures, ``apply --commit``): git must be there and know who
    commits, whatever the machine's ~/.gitconfig says. A test of the no-identity refusal removes
    these variables itself."""
    require("git")
    with pytest.MonkeyPatch.context() as mp:
        for key, value in GIT_IDENT.items():
            mp.setenv(key, value)
        yield


@pytest.fixture
def rsync_installed() -> None:
    """For a test that runs rsync itself (the loopback hosts check for everything they need)."""
    require("rsync")


@pytest.fixture(scope="session")
def release_cache() -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    return CACHE


@pytest.fixture
def release_tree(release_cache: Path, tmp_path: Path) -> Callable[[str], Path]:
    """``release_tree("0.6.1")``: a private git working copy of that verl source release."""
    from patchctl import releases

    def make(version: str) -> Path:
        src = releases.materialize(version)
        dest = tmp_path / f"verl-{version}"
        shutil.copytree(src, dest, symlinks=True)
        return dest

    return make


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file's bytes and mode, .git excluded: what "byte-identical" compares."""
    out = {}
    for p in sorted(root.rglob("*")):
        if ".git" in p.relative_to(root).parts or not p.is_file():
            continue
        out[str(p.relative_to(root))] = (p.read_bytes(), p.stat().st_mode & 0o777)
    return out


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout
