"""The host-side agent, run here exactly as ssh runs it there: ``python3 -c BOOTSTRAP`` + JSON stdin."""

from __future__ import annotations

import ast
import base64
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import agent, entry, placed, req

from patchctl.migrate import agent_cache, agent_files, remote_agent, verify_remote
from patchctl.remote import ssh


def finish_a_py_with_tags(root: Path, expected: list[list[object]]) -> dict[str, Any]:
    """``finish`` of ``a.py`` with the ``# Uky`` tag inventory this side expects: the tag tests
    differ only in what the host's tree holds besides it and in that expectation."""
    tags = {"pattern": r"#\s*(Uky)\b", "needles": ["Uky"], "expected": expected}
    return agent(req(root, "finish", [entry(root, "a.py")], tags=tags))


def test_runs_on_python_3_6_grammar() -> None:
    program = base64.b64decode(verify_remote._agent_b64()).decode()  # the three files ssh runs as one
    assert all(Path(m.__file__).read_text() in program for m in (agent_cache, agent_files, remote_agent))
    ast.parse(program, feature_version=(3, 6))
    assert "import patchctl" not in program


def test_finish_creates_a_nested_root_and_plan_does_not(tmp_path: Path) -> None:
    root = tmp_path / "a" / "b" / "verl"
    manifest = [["x.py", "f", "0" * 64, False]]
    plan = agent(req(root, "plan", manifest, rendered={".patchctl/env.sh": ""}))
    assert plan["problems"] == [["x.py", "missing"]] and plan["rendered"] == [".patchctl/env.sh"]
    assert not root.exists()
    reply = agent(req(root, "finish", manifest))
    assert reply["root_exists"] is False and reply["problems"] == [["x.py", "missing"]]  # as it was found
    assert root.is_dir()


def test_finish_reports_every_kind_of_difference(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    for name in ("same.py", "changed.py", "mode.sh"):
        (root / name).write_text(name)
    manifest = [
        entry(root, "same.py"),
        entry(root, "changed.py"),
        [*entry(root, "mode.sh")[:3], True],
        ["gone.py", "f", "0" * 64, False],
        ["link", "l", "same.py", False],
    ]
    (root / "changed.py").write_text("altered")
    os.symlink("elsewhere", root / "link")
    reply = agent(req(root, "finish", manifest, rendered={"git_ignore.py": "X = 1\n"}))
    assert dict(reply["problems"]) == {
        "changed.py": "content differs (sha256)",
        "mode.sh": "executable bit differs",
        "gone.py": "missing",
        "link": "link target differs",
    }
    assert (root / "git_ignore.py").read_text() == "X = 1\n" and reply["rendered"] == ["git_ignore.py"]
    prov = json.loads((root / ".patchctl" / "provenance.json").read_text())
    assert prov["commit"] == "abc" and prov["verified"] is False and prov["root"] == str(root)


def test_tag_inventory_is_compared(tmp_path: Path) -> None:
    root = tmp_path / "r"
    (root / "sub").mkdir(parents=True)
    (root / "a.py").write_text("x = 1  # Uky\n")
    (root / "sub" / "stale.py").write_text("# Uky: left from an older tree\n")
    (root / "checkpoints").mkdir()
    (root / "checkpoints" / "notes.py").write_text("# Uky in an output dir is not code\n")
    expected = [["a.py", 1, "x = 1  # Uky"], ["b.py", 3, "y = 2  # Uky"]]
    reply = finish_a_py_with_tags(root, expected)
    assert reply["tags_only_here"] == [["sub/stale.py", 1, "# Uky: left from an older tree"]]
    assert reply["tags_missing_here"] == [["b.py", 3, "y = 2  # Uky"]]


@pytest.mark.parametrize(
    ("stale", "expected", "verified"),
    [
        (False, [["a.py", 1, "x = 1  # Uky"]], True),
        (True, [["a.py", 1, "x = 1  # Uky"]], False),  # a tagged line only the host has
        (False, [["a.py", 1, "x = 1  # Uky"], ["b.py", 3, "y = 2  # Uky"]], False),  # one the host lacks
    ],
    ids=["same", "only-here", "missing-here"],
)
def test_provenance_is_verified_only_when_the_tags_agree_too(
    tmp_path: Path, stale: bool, expected: list, verified: bool
) -> None:
    """Every file matching is not enough: a tag mismatch alone leaves the host unverified (#18 audit)."""
    root = tmp_path / "r"
    root.mkdir()
    (root / "a.py").write_text("x = 1  # Uky\n")
    if stale:
        (root / "stale.py").write_text("y = 2  # Uky\n")
    reply = finish_a_py_with_tags(root, expected)
    assert reply["problems"] == []
    assert json.loads((root / ".patchctl" / "provenance.json").read_text())["verified"] is verified


def test_delete_removes_only_what_an_earlier_migrate_placed_inside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "r"
    (root / "old" / "deep").mkdir(parents=True)
    (root / "keep.py").write_text("k")
    (root / "old" / "deep" / "gone.py").write_text("g")
    (root / "made_here.log").write_text("the host's own output")
    outside = tmp_path / "outside.txt"
    outside.write_text("must survive")
    os.symlink(tmp_path, root / "escape")
    placed(root, ["keep.py", "old/deep/gone.py", "../outside.txt", str(outside), "escape/outside.txt"])
    manifest = [entry(root, "keep.py")]
    plan = agent(req(root, "plan", manifest, delete=True))
    assert plan["deletions"] == ["old/deep/gone.py"]
    assert (root / "old" / "deep" / "gone.py").exists()  # plan writes nothing
    reply = agent(req(root, "finish", manifest, delete=True))
    assert reply["deletions"] == ["old/deep/gone.py"] and not reply["problems"]
    assert not (root / "old").exists()  # emptied directories go too
    assert outside.read_text() == "must survive" and (root / "made_here.log").exists()
    assert json.loads((root / ".patchctl" / "manifest.json").read_text())["files"] == ["keep.py"]


def test_delete_guard_refuses_above_the_maximum(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    names = [f"f{i}.py" for i in range(4)]
    for n in names:
        (root / n).write_text(n)
    placed(root, names)
    reply = agent(req(root, "finish", [entry(root, "f0.py")], delete=True, max_delete=2))
    assert reply["delete_refused"] is True and len(reply["deletions"]) == 3
    assert all((root / n).exists() for n in names)
    assert not (root / ".patchctl" / "provenance.json").exists()  # refused: nothing at all was written
    # without --delete the files stay recorded as placed, so a later --delete still finds them
    agent(req(root, "finish", [entry(root, "f0.py")]))
    assert json.loads((root / ".patchctl" / "manifest.json").read_text())["files"] == names


def test_an_agent_error_is_a_reply_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    reply = agent(req(tmp_path / "file" / "root", "finish", []))
    assert reply["error"].startswith(("FileExistsError", "NotADirectoryError"))


@pytest.mark.parametrize("rel", ["../x", "/etc/passwd", "a/../../x", "", "a//b"])
def test_unsafe_paths_are_never_inside(tmp_path: Path, rel: str) -> None:
    assert remote_agent.inside(str(tmp_path), rel) is None


def test_an_agent_started_ahead_and_not_needed_does_nothing(tmp_path: Path) -> None:
    """migrate starts a host's agent before its request is ready; unused, it gets EOF and must
    leave the host as it was (no root created, no reply, exit 0)."""
    python = shutil.which("python3") or "python3"
    argv = [python, "-I", "-S", "-c", ssh._BOOTSTRAP.format(code=verify_remote._agent_b64())]
    done = subprocess.run(argv, input="", capture_output=True, text=True, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert list(tmp_path.iterdir()) == []
