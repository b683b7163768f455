"""The sabotage suite's CPU side: each sabotage patchset applies to the real release it was written
against (with the patchsets a prepared tree carries), the dry run names every set-up and command,
and the one sabotage that needs no GPU (a patch reverted after migrate) is caught by verify."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchctl.cli.main import cli

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "sabotage.py"
SABOTAGE = REPO / "benchmarks" / "sabotage"
#: sabotage patchset -> (release, the patchsets the prepared tree carries)
WRITTEN_FOR = {
    "sync-off": ("0.9.1", ("uky",)),
    "temp-ignored": ("0.9.1", ("uky",)),
    "adv-sign": ("0.9.1", ("uky",)),
    "opt-skip": ("0.9.1", ("uky",)),
    "weights-partial": ("0.9.1", ("uky",)),
    "weights-some": ("0.9.1", ("uky",)),
    "weights-names": ("0.9.1", ("uky",)),
    "adv-sign-v05": ("0.5.0", ("uky", "verl05-nofa-hf")),
    "opt-skip-v05": ("0.5.0", ("uky", "verl05-nofa-hf")),
}


def prepared(release_tree: Callable[[str], Path], version: str, patchsets: tuple[str, ...]) -> Path:
    tree = release_tree(version)
    sets = [a for p in patchsets for a in ("-p", p)]
    done = CliRunner().invoke(cli, ["apply", "--target", str(tree), *sets])
    assert done.exit_code == 0, done.output
    return tree


def test_every_sabotage_patchset_is_listed() -> None:
    assert sorted(p.name for p in SABOTAGE.iterdir() if (p / "patchset.toml").is_file()) == sorted(WRITTEN_FOR)


@pytest.mark.parametrize("version", ["0.9.1", "0.5.0"])
def test_sabotages_apply_to_the_real_release(
    version: str, release_tree: Callable[[str], Path], release_cache: Path
) -> None:
    names = [n for n, (v, _) in WRITTEN_FOR.items() if v == version]
    base = WRITTEN_FOR[names[0]][1]
    tree = prepared(release_tree, version, base)
    for name in names:
        copy = tree.with_name(f"{tree.name}-{name}")
        shutil.copytree(tree, copy, symlinks=True)
        sets = [a for p in (*base, str(SABOTAGE / name)) for a in ("-p", p)]
        done = CliRunner().invoke(cli, ["apply", "--target", str(copy), "--json", *sets])
        assert done.exit_code == 0, (name, done.output)
        rows = {
            r["patch"]: r["status"] for r in json.loads(done.output)["results"] if r["patchset"] == f"sabotage-{name}"
        }
        assert rows and set(rows.values()) == {"applied"}, (name, rows)
        target = tomllib.loads((SABOTAGE / name / "patchset.toml").read_text())["patch"][0]["target"][0]
        assert "# Sabotage:" in (copy / target).read_text() and "# Sabotage:" not in (tree / target).read_text()


def test_dry_run_prints_every_set_up_and_runs_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--tree",
            "/t/verl",
            "--tree-hf",
            "/t/verl05",
            "--python",
            "/venv/bin/python",
            "--pristine",
            "/x/verl-0.9.1.tar.gz",
            "--out",
            str(out),
            "--dry-run",
            "--",
            "trainer.total_training_steps=30",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    text = done.stdout
    assert not out.exists()
    for name, gate in (
        ("sync-off", "weights-synced"),
        ("temp-ignored", "rollout-agrees"),
        ("adv-sign", "learning"),
        ("opt-skip", "update-applied"),
        ("lr-zero", "update-applied"),
        ("ray-copy", "patched-code-ran"),
        ("reverted", "verify"),
        ("adv-sign-v05", "learning"),
        ("opt-skip-v05", "update-applied"),
    ):
        assert f"# {name}: expect {gate}" in text
    assert text.count("expect PASS") == 7  # three healthy runs on each path and shadow
    assert "# healthy-v05-3: expect PASS" in text and "--out " + f"{out}/healthy-v05-3/run" in text
    assert f"+ray_kwargs.ray_init.runtime_env.working_dir={out}/pristine/verl-0.9.1" in text
    assert (
        f"-m patchctl train --target /t/verl --profile smoke-vllm --python /venv/bin/python --out "
        f"{out}/lr-zero/run --timeout 600 --json actor_rollout_ref.actor.optim.lr=0 "
        "trainer.total_training_steps=30"
    ) in text
    assert f"-m patchctl apply --target {out}/sync-off/tree -p uky -p {SABOTAGE}/sync-off" in text
    assert "--profile smoke --python /venv/bin/python" in text  # the HF rows
    assert "patchctl-sabotage-shadow.pth" in text


def test_unknown_set_up_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--tree", "/t", "--only", "nope", "--dry-run"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "no set-up named nope" in done.stderr


def test_a_patch_reverted_after_migrate_is_caught_before_launch(
    release_tree: Callable[[str], Path], release_cache: Path, tmp_path: Path
) -> None:
    from patchctl import releases

    tree = prepared(release_tree, "0.9.1", ("uky",))
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--tree",
            str(tree),
            "--pristine",
            str(releases.materialize("0.9.1")),
            "--out",
            str(out),
            "--only",
            "reverted",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    row = json.loads((out / "sabotage.json").read_text())[0]
    assert (row["verdict"], row["failing"]) == ("FAIL", ["verify"])
    assert row["doctor"] == "verify: triton-cuda-stubs missing (verl/workers/rollout/vllm_rollout/__init__.py)"
    assert (
        "| reverted | verify | FAIL | verify | yes | verify: triton-cuda-stubs missing "
        "(verl/workers/rollout/vllm_rollout/__init__.py) | - |"
    ) in (out / "sabotage.md").read_text()


def test_a_sabotage_caught_by_another_gate_is_not_caught(tmp_path: Path) -> None:
    """The suite's own bar: the expected gate must be among the failing ones."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import sabotage
    finally:
        sys.path.remove(str(SCRIPT.parent))
    row = {"setup": "sync-off", "expect": "weights-synced", "verdict": "FAIL", "failing": ["learning"]}
    assert sabotage.caught(row) == "NO"
    assert sabotage.caught({**row, "failing": ["learning", "weights-synced"]}) == "yes"
    assert (
        sabotage.caught({"setup": "healthy-1", "expect": "none (pass)", "verdict": "FAIL", "failing": []})
        == "NO (a run that should pass failed)"
    )
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--tree", str(tmp_path), "--only", "lr-zero"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and f"--tree {tmp_path} is not a verl tree" in done.stderr
