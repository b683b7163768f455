"""capture picks the narrowest kind that reproduces an edit, and joins edits that touch."""

from __future__ import annotations

from pathlib import Path

from tests.capture.test_capture_refuses import capture, run, tree

SCRIPT = """#!/usr/bin/env bash
set -x
python3 -m verl.trainer.main_ppo data.train_batch_size=8
"""
MODULE = '''"""A module."""
import os


class Trainer:
    def fit(self, steps):
        total = 0
        for _ in range(steps):
            total += 1
        self.total = total
        return total
'''


def apply_to_fresh_base(tmp_path: Path, base: dict[str, str]) -> Path:
    fresh = tree(tmp_path / "fresh", base)
    code, _, out = run("apply", "--target", str(fresh), "--patchset", str(tmp_path / "out"))
    assert code == 0, out
    return fresh


def test_tagged_exports_in_a_script_become_shell_env(tmp_path: Path) -> None:
    fork = SCRIPT.replace("python3 -m", "export VLLM_USE_V1=1  # Uky\nexport OMP_NUM_THREADS=1  # Uky\npython3 -m")
    code, doc, _ = capture(tmp_path, {"run.sh": SCRIPT}, {"run.sh": fork})
    assert code == 0 and [p["kind"] for p in doc["patches"]] == ["shell-env"]
    assert 'env = ["VLLM_USE_V1=1", "OMP_NUM_THREADS=1"]' in (tmp_path / "out" / "patchset.toml").read_text()
    assert (apply_to_fresh_base(tmp_path, {"run.sh": SCRIPT}) / "run.sh").read_text() == fork


def test_edits_of_neighbouring_statements_become_one_patch(tmp_path: Path) -> None:
    fork = MODULE.replace(
        "        self.total = total\n        return total\n",
        "        self.total = total * 2  # Uky: count both passes\n        return self.total  # Uky\n",
    )
    code, doc, _ = capture(tmp_path, {"t.py": MODULE}, {"t.py": fork})
    assert code == 0 and [(p["id"], p["kind"]) for p in doc["patches"]] == [("t-fit", "structural")]
    manifest = (tmp_path / "out" / "patchset.toml").read_text()
    assert 'scope = "Trainer.fit"' in manifest and 'above = ["for _ in range(steps):"]' in manifest
    assert (apply_to_fresh_base(tmp_path, {"t.py": MODULE}) / "t.py").read_text() == fork


def test_an_edit_inside_a_loop_is_anchored_in_the_loop(tmp_path: Path) -> None:
    """A changed line in a `for` body is anchored inside that body, the loop named by its
    header (issue 27: minimal anchors); it used to replace the whole `for` statement."""
    fork = MODULE.replace("            total += 1\n", "            total += 2  # Uky\n")
    code, _, _ = capture(tmp_path, {"t.py": MODULE}, {"t.py": fork})
    assert code == 0
    manifest = (tmp_path / "out" / "patchset.toml").read_text()
    assert 'blocks = ["for _ in range(steps):"]' in manifest and "above = []" in manifest, manifest
    assert "before = " + "'" * 3 + "\n            total += 1\n" + "'" * 3 in manifest
    assert (apply_to_fresh_base(tmp_path, {"t.py": MODULE}) / "t.py").read_text() == fork
