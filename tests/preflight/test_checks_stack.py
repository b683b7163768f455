"""verl import location and the target's patches, on a real verl release and constructed trees."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner

from patchctl.cli.main import cli
from patchctl.preflight import Status, build
from patchctl.target import Target, open_tree


def verl_tree(root, version="9.9.9"):
    (root / "verl").mkdir(parents=True)
    (root / "verl" / "__init__.py").write_text(f"__version__ = {version!r}\n")
    return Target(root, version, str(root), None, False)


def test_target_verl_importable_only_from_its_root(one, make_ctx, tmp_path):
    target = verl_tree(tmp_path / "tree")
    r = one(make_ctx(target=target), "verl")
    assert r.status is Status.PASS
    assert f"verl 9.9.9 from {(tmp_path / 'tree' / 'verl').resolve()} (the target), when launched from" in r.value


def test_another_copy_for_processes_started_elsewhere(one, make_ctx, tmp_path):
    target = verl_tree(tmp_path / "tree")
    other = verl_tree(tmp_path / "site", "0.4.1")
    r = one(make_ctx({"PYTHONPATH": str(other.root)}, target=target), "verl")
    assert r.status is Status.WARN and str((other.root / "verl").resolve()) in r.value
    assert f"pip install -e {(tmp_path / 'tree').resolve()}" in r.fix


@pytest.mark.skipif(sys.version_info < (3, 11), reason="PYTHONSAFEPATH is Python 3.11+")
def test_another_copy_shadows_the_target(one, make_ctx, tmp_path):
    target = verl_tree(tmp_path / "tree")
    other = verl_tree(tmp_path / "site", "0.4.1")
    r = one(make_ctx({"PYTHONPATH": str(other.root), "PYTHONSAFEPATH": "1"}, target=target), "verl")
    assert r.status is Status.FAIL and "verl 0.4.1" in r.value and "not from the target" in r.value


def test_verl_whose_dependency_is_missing(one, make_ctx, tmp_path):
    target = verl_tree(tmp_path / "tree")
    (target.root / "verl" / "__init__.py").write_text("import tensordict_not_installed_anywhere\n")
    r = one(make_ctx(target=target), "verl")
    assert r.status is Status.FAIL
    assert "does not import: ModuleNotFoundError" in r.value and "'tensordict_not_installed_anywhere'" in r.fix


def test_real_release_on_this_machine(one, make_ctx, release_tree):
    target = open_tree(release_tree("0.6.1"))
    r = one(make_ctx(target=target), "verl")
    # verl 0.6.1 needs torch, ray, tensordict...: the CPU machine lacks some of them
    assert r.status is Status.FAIL and "does not import" in r.value and "install the missing package" in r.fix


def test_patches_missing_then_carried(one, release_tree):
    root = release_tree("0.6.1")
    target = open_tree(root)
    r = one(build(target), "patches")
    assert r.status is Status.FAIL and "vllm-enable-log-requests missing" in r.value
    assert r.fix == f"patchctl apply --target {target.root}"
    done = CliRunner().invoke(cli, ["apply", "--target", str(root)])
    assert done.exit_code == 0, done.output
    r = one(build(open_tree(root)), "patches")
    assert r.status is Status.PASS and "missing" not in r.value and "(applied " in r.value


def test_patches_without_target(one, make_ctx):
    assert one(make_ctx(), "patches").status is Status.SKIP
