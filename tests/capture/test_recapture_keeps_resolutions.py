"""A re-capture into an existing patchset keeps the conflict resolutions ``refresh`` recorded
there, where they still apply, and says which it dropped and why (issue 39, requirement 2)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.clirun import run
from tests.conftest import git

pytestmark = pytest.mark.slow

TRACKING = "verl/utils/tracking.py"
LINE = '        data = {"step": step, "data": data}\n'
FORK = '        data = {"step": step, "data": data, "uky": 1}  # Uky: mark our runs\n'
UPSTREAM = '        data = {"step": step, "data": data, "ts": 0}\n'
RESOLVED = '        data = {"step": step, "data": data, "ts": 0, "uky": 1}  # Uky: mark our runs\n'
OTHER = "verl/__init__.py"


def edit(tree: Path, rel: str, old: str, new: str) -> None:
    path = tree / rel
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.fixture
def resolved(tmp_path: Path, release_tree) -> tuple[Path, Path]:
    """A fork, its captured patchset, and a conflict of it resolved and recorded by ``refresh``."""
    from patchctl import releases

    fork = tmp_path / "fork"
    shutil.copytree(releases.materialize("0.6.1"), fork, symlinks=True)
    edit(fork, TRACKING, LINE, FORK)
    out = tmp_path / "mine"
    code, text = run("capture", "--from", str(fork), "--base", "verl==0.6.1", "--out", str(out))
    assert code == 0, text
    upstream = release_tree("0.6.1")
    edit(upstream, TRACKING, LINE, UPSTREAM)
    git(upstream, "commit", "-qam", "upstream")
    code, text = run("apply", "--target", str(upstream), "--patchset", str(out), "--conflicts=markers")
    assert code == 1, text
    marked = (upstream / TRACKING).read_text(encoding="utf-8")
    start, end = marked.index("<<<<<<< upstream"), marked.index("\n", marked.index(">>>>>>>")) + 1
    (upstream / TRACKING).write_text(marked[:start] + RESOLVED + marked[end:], encoding="utf-8")
    code, text = run("refresh", "--target", str(upstream), "--patchset", str(out))
    assert code == 0, text
    assert RESOLVED in (out / "resolutions.toml").read_text(encoding="utf-8")
    return fork, out


def test_a_recapture_keeps_the_resolution_of_an_unchanged_edit(resolved: tuple[Path, Path]) -> None:
    fork, out = resolved
    recorded = (out / "resolutions.toml").read_text(encoding="utf-8")
    # one more tagged edit elsewhere in the fork: the resolved patch is unchanged
    edit(fork, OTHER, "import os\n", "import os\nUKY_MARK = 1  # Uky: one more edit\n")
    code, text = run("capture", "--from", str(fork), "--base", "verl==0.6.1", "--out", str(out))
    assert code == 0, text
    assert "kept 1 conflict resolution(s)" in text
    assert (out / "resolutions.toml").read_text(encoding="utf-8") == recorded
    assert "UKY_MARK" in (out / "patchset.toml").read_text(encoding="utf-8") or any(
        "UKY_MARK" in p.read_text(encoding="utf-8", errors="replace") for p in out.rglob("*") if p.is_file()
    )


def test_a_resolution_whose_edit_changed_is_dropped_with_the_reason(resolved: tuple[Path, Path]) -> None:
    fork, out = resolved
    edit(fork, TRACKING, FORK, FORK.replace('"uky": 1', '"uky": 2'))
    code, text = run("capture", "--from", str(fork), "--base", "verl==0.6.1", "--out", str(out))
    assert code == 0, text
    assert "dropped 1 resolution(s) that no longer apply" in text
    assert "its edit changed since the conflict was resolved" in text
    assert not (out / "resolutions.toml").exists()
