"""The real parts the suite runs (git, rsync, OpenSSH), and what a test does when one is missing.

On a developer's machine a missing tool skips the tests that need it, naming the install
command. Under ``CI=true`` it fails them instead: CI installs every tool (``.ci/run``), so a
green CI proves the real-sshd and real-rsync tests ran rather than skipped (#10).
"""

from __future__ import annotations

import os
import shutil

import pytest

#: each tool the tests run, and the Debian/Ubuntu package that brings it
PACKAGES = {
    "git": "git",
    "rsync": "rsync",
    "ssh": "openssh-client",
    "ssh-keygen": "openssh-client",
    "sshd": "openssh-server",
    "fio": "fio",
    "sbatch": "slurm-wlm",
    "munged": "munge",
}


def in_ci() -> bool:
    """Whether this run is CI's (``CI`` is set to true by .ci/run, GitHub Actions, GitLab CI...)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def unavailable(why: str) -> None:
    """Skip the running test because ``why`` (a missing part and its install command), or fail
    it under CI, where a skip would pass for a test that never ran."""
    if in_ci():
        pytest.fail(f"{why} (CI=true: a missing tool fails the run instead of skipping)", pytrace=False)
    pytest.skip(why)


def missing(*tools: str) -> str | None:
    """``"TOOL not found: apt-get install -y PACKAGE"`` for the first tool not on PATH, or None."""
    for tool in tools:
        if shutil.which(tool) is None:
            package = PACKAGES[os.path.basename(tool)]
            return f"{tool} not found: apt-get install -y {package}"
    return None


def require(*tools: str) -> None:
    """Skip (or under CI fail) the running test unless every tool is on PATH."""
    why = missing(*tools)
    if why is not None:
        unavailable(why)
