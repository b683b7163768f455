"""A function upstream moved under a new name is followed (issue 38 req 4), on verl's real history.

verl's commit c6dc8b73c ("misc: change main_task to TaskRunner actor (#648)") turned the Ray task
``main_task`` of ``verl/trainer/main_ppo.py`` into the method ``TaskRunner.run``, its body
re-indented. A fork edit in ``main_task``, made on the commit before, applied with ``--repo`` to
v0.3.0.post1, must land in ``TaskRunner.run``. The test reads a bare mirror of verl (with tags):
``PATCHCTL_VERL_MIRROR``, else the one this project's machines keep; it is skipped without one.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from tests.drift.helpers import invoke

MIRROR = Path(os.environ.get("PATCHCTL_VERL_MIRROR", "/work/.mirror/volcengine+verl/repo"))
#: verl's commit that made ``main_task`` the method ``TaskRunner.run``
RENAME = "c6dc8b73cf011aa75b8c6a47b0322f50aed800ad"
FILES = ("verl/__init__.py", "verl/version/version", "verl/trainer/main_ppo.py")
LINE = "    local_path = copy_to_local(config.actor_rollout_ref.model.path)\n"
EDIT = '    print("model at", local_path)  # Uky: log the model path\n'
#: a second edit, in code upstream left alone: placed directly, before the carried one is placed on top
NEAR = '    file_path = reward_fn_config.get("path")\n'
NEAR_EDIT = '    print("reward fn", file_path)  # Uky: log the reward file\n'

pytestmark = pytest.mark.skipif(
    not (MIRROR / "objects").is_dir() and not (MIRROR / ".git").is_dir(),
    reason=f"no verl mirror at {MIRROR} (set PATCHCTL_VERL_MIRROR to a clone of volcengine/verl with its tags)",
)


def _git(*args: str) -> str:
    return subprocess.run(["git", f"--git-dir={MIRROR}", *args], check=True, capture_output=True, text=True).stdout


def _export(ref: str, where: Path) -> Path:
    """The few files the patch reads, as they are at ``ref``."""
    for rel in FILES:
        dest = where / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(_git("show", f"{ref}:{rel}"))
    return where


def _scope_of(text: str, needle: str) -> str:
    """The qualified name of the def holding the line with ``needle``."""
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if child.lineno <= line <= (child.end_lineno or 0):
                    found.append((child.lineno, name))
                visit(child, f"{name}.")

    visit(ast.parse(text), "")
    return max(found)[1]


def test_an_edit_in_a_function_upstream_renamed_and_made_a_method_lands_in_the_method(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATCHCTL_CACHE", str(tmp_path / "cache"))  # walked here, not read from an earlier run
    base = _git("rev-parse", f"{RENAME}^").strip()
    fork = _export(base, tmp_path / "fork")
    main_ppo = fork / "verl/trainer/main_ppo.py"
    text = main_ppo.read_text()
    assert text.count(LINE) == 1 and "\ndef main_task(config):\n" in text
    assert text.count(NEAR) == 1
    main_ppo.write_text(text.replace(LINE, LINE + EDIT).replace(NEAR, NEAR + NEAR_EDIT))
    ps = tmp_path / "ps"
    done = invoke("capture", "--from", str(fork), "--base", str(_export(base, tmp_path / "base")), "--out", str(ps))
    assert done.exit_code == 0, done.output
    manifest = ps / "patchset.toml"
    manifest.write_text(re.sub(r'(?m)^captured_against = ".*"$', f'captured_against = "{base}"', manifest.read_text()))
    target = _export("v0.3.0.post1", tmp_path / "target")

    pristine = (target / "verl/trainer/main_ppo.py").read_bytes()

    plain = invoke("apply", "--target", str(target), "--patchset", str(ps), "--json", "--dry-run")
    got = {r["patch"]: r for r in json.loads(plain.output)["results"]}
    assert len(got) == 2, got
    # without the history, main_task is nowhere in v0.3.0.post1; the reward function's edit lands
    assert sorted(r["status"] for r in got.values())[0] == "applied"
    (name,) = [k for k, r in got.items() if r["status"] != "applied"]

    done = invoke("apply", "--target", str(target), "--patchset", str(ps), "--repo", str(MIRROR), "--json")
    assert done.exit_code == 0, done.output
    got = {r["patch"]: r for r in json.loads(done.output)["results"]}
    assert all(r["status"] == "applied" for r in got.values()), got
    r = got[name]
    assert r["status"] == "applied", r
    assert r["path"] == "verl/trainer/main_ppo.py"
    moved = re.search(
        r"verl/trainer/main_ppo.py:main_task moved to verl/trainer/main_ppo.py:TaskRunner.run in "
        rf"{RENAME[:12]} \(renamed; its body (\d+)% alike\)",
        r["reason"],
    )
    assert moved is not None, r["reason"]
    assert int(moved.group(1)) >= 80
    after = (target / "verl/trainer/main_ppo.py").read_text()
    # the method's own indentation, right after the line it followed in the fork
    assert "    " + LINE + "    " + EDIT in after
    assert _scope_of(after, "# Uky: log the model path") == "TaskRunner.run"
    assert NEAR + NEAR_EDIT in after
    assert after.count("# Uky") == 2
    # the record says what the file was before either patch (what verify and revert compare with)
    record = json.loads((target / ".patchctl/applied.json").read_text())
    befores = {e["sha256_before"] for e in record["patches"] if e["path"] == "verl/trainer/main_ppo.py"}
    assert befores == {hashlib.sha256(pristine).hexdigest()}
    done = invoke("revert", "--target", str(target), "--patchset", str(ps), "--repo", str(MIRROR))
    assert done.exit_code == 0, done.output
    assert (target / "verl/trainer/main_ppo.py").read_bytes() == pristine
