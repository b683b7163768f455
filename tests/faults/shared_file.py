"""The fixtures of the tests on one file two patches share (apply's dirty check, revert's record):
a git identity, the tree and the patchset of :func:`~tests.faults.helpers.make_shared_file_tree`.

Imported by name by the test files that use them, not put in a conftest: other faults tests prove
that patchctl needs no git identity, and an autouse identity there would hide it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.faults.helpers import GIT_IDENT, make_shared_file_patchset, make_shared_file_tree


@pytest.fixture(autouse=True)
def git_ident(monkeypatch: pytest.MonkeyPatch) -> None:
    """apply --commit and the tests' own commits need an author."""
    for k, v in GIT_IDENT.items():
        monkeypatch.setenv(k, v)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_shared_file_tree(tmp_path / "tree")


@pytest.fixture
def ps(tmp_path: Path) -> Path:
    return make_shared_file_patchset(tmp_path / "ps")
