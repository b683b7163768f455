"""Finding things as git users expect (#19): the tree around the current folder, ``-C DIR``, a
path that does not exist, "did you mean", where a missing config was looked for, ``[targets]``
names in ``matrix --versions``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from patchctl.cli.main import cli


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(autouse=True)
def in_empty_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No ./patchctl.toml of the developer's and no ~/.config one: only what a test writes."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return here


def test_the_tree_is_found_upward_from_the_current_folder(
    release_tree: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = release_tree("0.6.1")
    monkeypatch.chdir(tree / "verl" / "utils")
    done = run("verify", "--json")
    assert done.exit_code == 1 and json.loads(done.stdout)["target"] == str(tree.resolve())


def test_outside_any_tree_it_says_it_looked_upward(in_empty_folder: Path) -> None:
    done = run("verify")
    assert done.exit_code == 2
    assert f"{in_empty_folder.resolve()}: not a verl tree (no verl/__init__.py there or in any folder above)" in (
        done.output
    )


def test_dash_c_runs_as_if_started_there(release_tree: Callable[[str], Path]) -> None:
    tree = release_tree("0.6.1")
    done = run("-C", str(tree / "verl"), "verify", "--json")
    assert done.exit_code == 1 and json.loads(done.stdout)["target"] == str(tree.resolve())


def test_dash_c_to_nowhere_says_so(tmp_path: Path) -> None:
    done = run("-C", str(tmp_path / "nowhere"), "list")
    assert done.exit_code == 2 and f"Directory '{tmp_path / 'nowhere'}' does not exist" in done.output


def test_a_path_that_does_not_exist_says_so(tmp_path: Path) -> None:
    done = run("apply", "--target", str(tmp_path / "verl_Ukyy"))
    assert done.exit_code == 2
    assert done.output == f"error: --target {tmp_path / 'verl_Ukyy'}: no such file or directory; check the path\n"


def test_did_you_mean_a_cluster(in_empty_folder: Path) -> None:
    (in_empty_folder / "patchctl.toml").write_text('[clusters.gpu]\nhosts = ["n1"]\nroot = "/r"\n')
    done = run("migrate", "gpy")
    assert done.exit_code == 2 and "no cluster named 'gpy' (did you mean 'gpu'?) (known: gpu)" in done.output


def test_did_you_mean_a_target_name(in_empty_folder: Path) -> None:
    (in_empty_folder / "patchctl.toml").write_text('[targets]\nmine = "/nonexistent/verl"\n')
    done = run("verify", "--target", "mien")
    assert done.exit_code == 2 and "in [targets] of patchctl.toml (did you mean 'mine'?)" in done.output


def test_did_you_mean_a_profile() -> None:
    done = run("train", "--profile", "smok")
    assert done.exit_code == 2 and "(did you mean 'smoke'?)" in done.output


def test_did_you_mean_a_patchset() -> None:
    done = run("apply", "--patchset", "ukky")
    assert done.exit_code == 2 and "(did you mean 'uky'?)" in done.output


def test_did_you_mean_a_patch_id(release_tree: Callable[[str], Path]) -> None:
    done = run("apply", "--target", str(release_tree("0.6.1")), "--only", "triton-cuda-stub", "--dry-run")
    assert done.exit_code == 2 and "no such patch in the loaded patchsets (did you mean 'triton-cuda-stubs'?)" in (
        done.output
    )


def test_no_config_at_all_lists_where_it_looked(in_empty_folder: Path, tmp_path: Path) -> None:
    done = run("validate", "gpu")
    assert done.exit_code == 2
    assert done.output == (
        f"error: cluster 'gpu': no config file (looked for {in_empty_folder / 'patchctl.toml'}, "
        f"{tmp_path / 'xdg' / 'patchctl' / 'config.toml'}); create ./patchctl.toml with [clusters.gpu] "
        "(a complete example: docs/patchctl.toml) or pass --config FILE\n"
    )
    named = run("verify", "--target", "mine")
    assert "and not a target name in [targets] (no config file (looked for " in named.output


def test_matrix_takes_target_names(in_empty_folder: Path, release_tree: Callable[[str], Path]) -> None:
    tree = release_tree("0.6.1")
    (in_empty_folder / "patchctl.toml").write_text(f'[targets]\nold = "verl==0.6.1"\nmine = "{tree}"\n')
    done = run("matrix", "--versions", "old,mine", "--json")
    assert done.exit_code == 0, done.output
    doc = json.loads(done.stdout)
    cells = {(c["patch"], c["version"]): c["status"] for c in doc["cells"]}
    assert cells["vllm-enable-log-requests", "old"] == cells["vllm-enable-log-requests", "mine"] == "applied"
    (in_empty_folder / "patchctl.toml").write_text(f'[targets]\nloose = "{in_empty_folder}"\n')
    loose = run("matrix", "--versions", "loose")
    assert loose.exit_code == 2 and "--versions loose: names " in loose.output and "not a git checkout" in loose.output


def test_drift_takes_target_names(in_empty_folder: Path, release_tree: Callable[[str], Path]) -> None:
    tree = release_tree("0.6.1")
    (in_empty_folder / "patchctl.toml").write_text(f'[targets]\nmine = "{tree}"\nold = "verl==0.6.1"\n')
    done = run("drift", "--from", "old", "--to", "mine", "--json")
    assert done.exit_code == 0, done.output  # the same tree on both sides: nothing changed
    doc = json.loads(done.stdout)
    assert doc["from"]["label"] == "verl==0.6.1" and doc["to"]["label"] == str(tree)


def test_capture_takes_a_target_name_as_its_base(in_empty_folder: Path, tmp_path: Path) -> None:
    base, fork = tmp_path / "base", tmp_path / "fork"
    (base / "pkg").mkdir(parents=True)
    (base / "pkg" / "mod.py").write_text("def f():\n    return 1\n")
    (fork / "pkg").mkdir(parents=True)
    (fork / "pkg" / "mod.py").write_text("def f():\n    return 2  # Uky\n")
    (in_empty_folder / "patchctl.toml").write_text(f'[targets]\npristine = "{base}"\n')
    done = run("capture", "--from", str(fork), "--base", "pristine", "--dry-run", "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["base"].startswith(f"{base}, content sha256:")  # the directory, not a ref
