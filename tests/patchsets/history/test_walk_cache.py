"""Walks kept on disk (issue 38 req 8): read back by the next command, and checked as untrusted data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.drift.helpers import invoke
from tests.patchsets.history.upstream_repo import build, captured, checkout

from patchctl.patchsets.history import disk


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("walk-cache")
    build(tmp / "up")
    return tmp / "up", captured(tmp / "up", tmp)


def _apply(world: tuple[Path, Path], where: Path) -> tuple[dict[str, dict[str, str]], str]:
    up, ps = world
    target = checkout(up, "v0.2.0", where)
    done = invoke("apply", "--target", str(target), "--patchset", str(ps), "--repo", str(up), "--json")
    assert done.exit_code == 0, done.output
    return {r["patch"]: r for r in json.loads(done.output)["results"]}, (
        target / "verl/trainer/ppo_trainer.py"
    ).read_text()


def _walk_of(folder: Path, path: str) -> Path:
    """The cached walk that ends in ``path``."""
    (found,) = [f for f in folder.rglob("*.json") if json.loads(f.read_text())["path"] == path]
    return found


def test_a_walk_is_read_back_from_disk_and_a_tampered_one_is_walked_again(
    world, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATCHCTL_CACHE", str(tmp_path / "cache"))
    first, text = _apply(world, tmp_path / "t1")
    assert first["ppo-fit"]["status"] == "applied"
    assert "99 merge(s)" not in first["ppo-fit"]["reason"]
    cached = _walk_of(disk.folder(), "verl/trainer/ppo_trainer.py")

    # read back: a field changed on disk shows in the next command's reason
    doc = json.loads(cached.read_text())
    cached.write_text(json.dumps({**doc, "merges": 99}))
    again, again_text = _apply(world, tmp_path / "t2")
    assert "carried from its base by 99 merge(s)" in again["ppo-fit"]["reason"]
    assert again_text == text
    # walks cached by other code (another version, a changed threshold) are not read
    with monkeypatch.context() as m:
        m.setattr(disk, "_code", lambda: "other code")
        other, _ = _apply(world, tmp_path / "t2-other")
    assert other == first

    # a line that is neither upstream's nor the edit's: the file is no walk of ours, walked again
    injected = doc["patched"].replace(
        "        return self.step", "        __import__('os').system('id')\n        return self.step"
    )
    cached.write_text(json.dumps({**doc, "merges": 99, "patched": injected}))
    third, third_text = _apply(world, tmp_path / "t3")
    assert third == first
    assert third_text == text and "system" not in third_text

    # a path out of the tree, fields of the wrong type, or no JSON at all: the same
    for i, bad in enumerate(
        (
            json.dumps({**doc, "merges": 99, "path": "../../outside.py"}),
            json.dumps({**doc, "merges": "99"}),
            json.dumps({**doc, "merges": 99, "stopped_at": "HEAD"}),
            "{not json",
        )
    ):
        cached.write_text(bad)
        got, got_text = _apply(world, tmp_path / f"bad{i}")
        assert got == first, bad
        assert got_text == text
    assert not (tmp_path / "outside.py").exists()
