"""Path settings: ``--cluster``, else the environment, else the tree's ``git_ignore.py`` (issue 10, req. 7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchctl.cli.main import cli
from patchctl.clusters import Cluster, Host
from patchctl.migrate.render import EXAMPLE, render_git_ignore
from patchctl.train.settings import ENVIRONMENT, BadGitIgnore, read_git_ignore, resolve

EXAMPLE_FILE = Path(__file__).resolve().parents[2] / "src/patchctl/patchsets/builtin/uky/files" / EXAMPLE
NAMES = ["MODEL_PATH", "DATA_DIR", "CHECKPOINT_DIR"]


def _cluster(**paths: str) -> Cluster:
    return Cluster("lab", (Host("n", "/r"),), "/r", Path("patchctl.toml"), paths=paths)


def _migrated(root: Path, **paths: str) -> Path:
    """The git_ignore.py ``patchctl migrate`` writes on a host: the uky example with the cluster's paths."""
    root.mkdir(parents=True, exist_ok=True)
    text = render_git_ignore(
        EXAMPLE_FILE.read_text(encoding="utf-8"), paths, source=Path("patchctl.toml"), cluster="lab"
    )
    (root / "git_ignore.py").write_text(text, encoding="utf-8")
    return root / "git_ignore.py"


def test_each_name_from_the_first_source_that_has_it(tmp_path: Path) -> None:
    gi = _migrated(tmp_path, MODEL_PATH="/gi/model", DATA_DIR="/gi/data")
    environ = {"MODEL_PATH": "/env/model", "DATA_DIR": "/env/data"}
    got = resolve(NAMES, tmp_path, _cluster(MODEL_PATH="/cl/model"), environ)
    assert {k: (s.value, s.source) for k, s in got.items()} == {
        "MODEL_PATH": ("/cl/model", "cluster lab"),
        "DATA_DIR": ("/env/data", ENVIRONMENT),
        # the example's own value: migrate renders only what the cluster sets
        "CHECKPOINT_DIR": ("/root/checkpoints/verl_Uky", str(gi)),
    }
    got = resolve(NAMES, tmp_path, None, {})
    assert {k: s.value for k, s in got.items()} == {
        "MODEL_PATH": "/gi/model",
        "DATA_DIR": "/gi/data",
        "CHECKPOINT_DIR": "/root/checkpoints/verl_Uky",
    }
    assert resolve(NAMES, tmp_path / "nowhere", None, {}) == {}


def test_git_ignore_is_read_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    (tmp_path / "git_ignore.py").write_text(
        f'open({str(marker)!r}, "w").close()\nimport sys; sys.exit(3)\n'
        'MODEL_PATH = "/m"\nDATA_DIR: str = "/d"\nLOG_DIR = compute()\nVERL_ROOT = 3\n'
    )
    assert read_git_ignore(tmp_path / "git_ignore.py") == {"MODEL_PATH": "/m", "DATA_DIR": "/d"}
    assert not marker.exists()


def test_a_broken_git_ignore_matters_only_when_needed(tmp_path: Path) -> None:
    (tmp_path / "git_ignore.py").write_text('MODEL_PATH = "/m"\nDATA_DIR = (\n')
    with pytest.raises(BadGitIgnore) as caught:
        resolve(NAMES, tmp_path, None, {})
    assert str(caught.value).startswith(f"{tmp_path}/git_ignore.py:2: not valid Python (")
    assert str(caught.value).endswith(
        '; fix the file (keep NAME = "path" lines), or pass the paths with --cluster NAME or in the environment'
    )
    got = resolve(["MODEL_PATH"], tmp_path, _cluster(MODEL_PATH="/c"), {})
    assert got["MODEL_PATH"].value == "/c"


def test_debug_on_a_migrated_host_needs_no_config(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`patchctl train --profile debug` where migrate rendered git_ignore.py: no --cluster, no config file."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    gi = _migrated(tree, VERL_ROOT=str(tree), MODEL_PATH="/models/qwen", DATA_DIR="/data/fake")
    done = CliRunner().invoke(
        cli,
        ["train", "--target", str(tree), "--profile", "debug", "--dry-run", "--out", str(tmp_path / "run")],
        catch_exceptions=False,
    )
    assert done.exit_code == 0, done.output
    assert f"# MODEL_PATH=/models/qwen  (from {gi})" in done.output
    assert "actor_rollout_ref.model.path=/models/qwen" in done.output
    assert "data.train_files=/data/fake/train_tiny.parquet" in done.output
    monkeypatch.setenv("DATA_DIR", "/env/data")
    done = CliRunner().invoke(
        cli,
        ["train", "--target", str(tree), "--profile", "debug", "--dry-run", "--json", "--out", str(tmp_path / "run")],
        catch_exceptions=False,
    )
    doc = json.loads(done.output)
    assert doc["settings"]["DATA_DIR"] == {"value": "/env/data", "source": ENVIRONMENT}
    assert doc["settings"]["MODEL_PATH"] == {"value": "/models/qwen", "source": str(gi)}
    assert "data.train_files=/env/data/train_tiny.parquet" in doc["command"]


def test_without_any_source_the_error_names_all_three(tree: Path, tmp_path: Path) -> None:
    done = CliRunner().invoke(cli, ["train", "--target", str(tree), "--profile", "debug", "--dry-run"])
    assert done.exit_code == 2
    assert done.output == (
        "error: profile debug needs MODEL_PATH, DATA_DIR; set them in [clusters.NAME.paths] of "
        "patchctl.toml and pass --cluster NAME, export them, or write them in the tree's "
        "git_ignore.py (patchctl migrate renders it)\n"
    )
