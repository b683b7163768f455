"""The fixtures of the tests on one file two patches share (apply's dirty check, revert's record):
the tree and the patchset of :func:`~tests.faults.helpers.make_shared_file_tree`. The git identity
their commits need comes from the session-wide ``git_identity`` of ``tests/conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.faults.helpers import make_shared_file_patchset, make_shared_file_tree


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_shared_file_tree(tmp_path / "tree")


@pytest.fixture
def ps(tmp_path: Path) -> Path:
    return make_shared_file_patchset(tmp_path / "ps")
