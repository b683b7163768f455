"""``train`` without ``--profile`` runs a smoke profile the tree has the rollout for (issue 39,
requirement 7): ``smoke`` rolls out with HuggingFace, which verl >= 0.6 refuses, so the README's own
0.6.1 failed on its first ``train``. The pick is said on stderr."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchctl.cli.main import cli

pytestmark = pytest.mark.slow


def _dry_run(tree: Path) -> tuple[int, dict, str]:
    done = CliRunner().invoke(cli, ["train", "--target", str(tree), "--dry-run", "--json"])
    return done.exit_code, json.loads(done.stdout) if done.exit_code == 0 else {}, done.stderr


@pytest.mark.parametrize(("version", "picked"), [("0.6.1", "smoke-vllm"), ("0.5.0", "smoke")])
def test_the_default_profile_is_one_the_tree_can_run(
    version: str, picked: str, release_tree: Callable[[str], Path]
) -> None:
    code, plan, err = _dry_run(release_tree(version))
    assert code == 0, err
    assert plan["profile"] == picked
    assert f"train: profile {picked} (picked: verl {version} has the " in err


def test_an_explicit_profile_is_kept_and_still_checked(release_tree: Callable[[str], Path]) -> None:
    done = CliRunner().invoke(cli, ["train", "--target", str(release_tree("0.6.1")), "--profile", "smoke", "--dry-run"])
    assert done.exit_code == 2
    assert "use --profile smoke-vllm" in done.output
