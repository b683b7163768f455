"""Reading what a verl tree declares, without executing it."""

from __future__ import annotations

from pathlib import Path

from patchctl.preflight.context import build
from patchctl.preflight.declared import read_requirements, read_settings
from patchctl.target import open_tree

EXAMPLE = Path(__file__).resolve().parents[2] / "src/patchctl/patchsets/builtin/uky/files/git_ignore.py.example"


def test_real_setup_py_ranges(release_tree):
    reqs, source = read_requirements(release_tree("0.6.1"))
    assert source == "setup.py"
    assert reqs["vllm"] == ">=0.8.5,<=0.11.0"  # declared order kept
    assert reqs["ray"] == ">=2.41.0" and reqs["tensordict"] == ">=0.8.0,<=0.10.0,!=0.9.0"


def test_setup_py_is_parsed_not_run(tmp_path):
    witness = tmp_path / "executed"
    (tmp_path / "setup.py").write_text(
        f"open({str(witness)!r}, 'w').write('x')\nREQ = ['vllm==0.9.2', 'not a req!']\n"
        "setup(python_requires='>=3.10')\n"
    )
    reqs, _ = read_requirements(tmp_path)
    assert reqs == {"vllm": "==0.9.2", "python": ">=3.10"}
    assert not witness.exists()


def test_broken_setup_py_gives_nothing(tmp_path):
    (tmp_path / "setup.py").write_text("def broken(:\n")
    assert read_requirements(tmp_path) == ({}, "setup.py")


def test_git_ignore_settings():
    assert read_settings(EXAMPLE)["DATA_DIR"] == "/root/data/fake_dataset"


def test_paths_precedence(tmp_path):
    root = tmp_path / "tree"
    (root / "verl").mkdir(parents=True)
    (root / "verl" / "__init__.py").write_text("")
    (root / "git_ignore.py").write_text('DATA_DIR = "/from/git_ignore"\nMODEL_PATH = "/m"\n')
    target = open_tree(root)
    assert build(target, env={}).paths["DATA_DIR"] == "/from/git_ignore"
    ctx = build(target, env={"DATA_DIR": "/from/env"})
    assert ctx.paths == {"DATA_DIR": "/from/env"} and ctx.paths_source == "environment"
