"""The built-in verl05-nofa-hf patchset on the real verl 0.5.0 release, with uky, through the CLI."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchctl.cli.main import cli
from patchctl.patchsets.loader import load_patchsets

pytestmark = pytest.mark.slow
SETS = ["--patchset", "uky", "--patchset", "verl05-nofa-hf"]


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file's bytes and mode outside .git: what "byte-identical" compares."""
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mode & 0o777)
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def test_manifest_loads_with_its_own_tag() -> None:
    (ps,) = load_patchsets(["verl05-nofa-hf"])
    assert {p.tag for p in ps.patches} == {"patchctl-compat"}
    assert {p.kind for p in ps.patches} == {"keyword-value", "guard-import"}


def test_apply_verify_revert_on_verl_050(release_tree: Callable[[str], Path]) -> None:
    tree = release_tree("0.5.0")
    before = snapshot(tree)
    runner = CliRunner()
    done = runner.invoke(cli, ["apply", "--target", str(tree), *SETS])
    assert done.exit_code == 0, done.output
    hf = (tree / "verl/workers/rollout/hf_rollout.py").read_text()
    assert '"num_return_sequences": 1,  # patchctl-compat' in hf
    assert "# position_ids=position_ids,  # patchctl-compat" in hf
    fsdp = (tree / "verl/workers/fsdp_workers.py").read_text()
    assert fsdp.count('attn_implementation=os.environ.get("VERL_ATTN_IMPLEMENTATION", "sdpa")') == 3
    assert 'attn_implementation="flash_attention_2"' not in fsdp.replace('# attn_implementation="flash', "").replace(
        'attn_implementation="flash_attention_2"  # patchctl', ""
    )
    for rel in (
        "verl/workers/actor/dp_actor.py",
        "verl/workers/critic/dp_critic.py",
        "verl/workers/engine/fsdp/engine_impl.py",
    ):
        assert "    try:  # patchctl-compat\n        from flash_attn.bert_padding" in (tree / rel).read_text()

    done = runner.invoke(cli, ["verify", "--target", str(tree), *SETS, "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    compat = [p for p in report["patches"] if p["patchset"] == "verl05-nofa-hf"]
    assert len(compat) == 7 and all(p["status"] == "present" for p in compat)
    assert report["tags"]["unaccounted"] == []

    done = runner.invoke(cli, ["revert", "--target", str(tree), *SETS])
    assert done.exit_code == 0, done.output
    assert snapshot(tree) == before
    assert git(tree, "status", "--porcelain") == ""


def test_not_applicable_on_verl_061(release_tree: Callable[[str], Path]) -> None:
    tree = release_tree("0.6.1")
    done = CliRunner().invoke(cli, ["verify", "--target", str(tree), "--patchset", "verl05-nofa-hf", "--json"])
    assert done.exit_code == 0, done.output
    assert {p["status"] for p in json.loads(done.output)["patches"]} == {"not-applicable"}
