"""Overrides checked against the target's own hydra config before launch (issue 13, req. 5)."""

from __future__ import annotations

import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from standin import CONFIGS, stand_in

from patchctl.cli.main import cli
from patchctl.clusters import Cluster, Host
from patchctl.target import open_tree
from patchctl.train import run, treeconfig
from patchctl.train.profiles import load_profiles
from patchctl.train.rollouts import RolloutMissing
from patchctl.train.treeconfig import UnknownKey, yaml_keys

RELEASES = ("0.4.1", "0.5.0", "0.6.0", "0.6.1", "0.7.0")


def _flatten(node: Any, prefix: str = "") -> set[str]:
    out: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            out |= {path} | _flatten(value, path)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("version", RELEASES)
def test_yaml_keys_equal_pyyaml_on_every_config_file(version: str, release_cache: Path) -> None:
    """patchctl reads YAML without PyYAML; on every config file verl ships it must read the same keys."""
    yaml = pytest.importorskip("yaml")
    from patchctl import releases

    with tarfile.open(releases.sdist(version)) as tar:
        members = [m for m in tar.getmembers() if "/verl/trainer/config/" in m.name and m.name.endswith(".yaml")]
        assert members
        for m in members:
            text = tar.extractfile(m).read().decode()
            assert yaml_keys(text) == _flatten(yaml.safe_load(text) or {}), m.name


def test_yaml_keys_forms() -> None:
    text = (
        "a:\n  # comment\n  b: 1\n  c:\n    - x\n    - y: 2\n  d: ${oc.select:a.b,\n    null}\n"
        "  e: {f: 1, g: [1, 2]}\n  'h.i': 3\nlist:\n- 1\nz: |\n  k: not a key\n"
    )
    assert yaml_keys(text) == {"a", "a.b", "a.c", "a.d", "a.e", "a.e.f", "a.e.g", "a.h.i", "list", "z"}


def _tree(tmp_path: Path, version: str) -> Path:
    return stand_in(tmp_path / f"verl-{version}", version)


def test_unknown_key_names_the_key_and_the_version(tmp_path: Path) -> None:
    root = _tree(tmp_path, "0.6.1")
    with pytest.raises(UnknownKey) as caught:
        treeconfig.check(root, "0.6.1", ["trainer.total_epochs=1", "trainer.n_gpu=2"])
    assert str(caught.value) == (
        "override 'trainer.n_gpu=2': verl 0.6.1 has no key trainer.n_gpu "
        "(verl/trainer/config/_generated_ppo_trainer.yaml); check the spelling, or add "
        "a new key with +trainer.n_gpu=2"
    )
    with pytest.raises(UnknownKey, match=r"did you mean trainer\.total_epochs\?"):
        treeconfig.check(root, "0.6.1", ["trainer.total_epoch=1"])
    with pytest.raises(UnknownKey, match=r"verl 0.6.1 has no key trainer.nope to delete"):
        treeconfig.check(root, "0.6.1", ["~trainer.nope"])
    with pytest.raises(
        UnknownKey,
        match=r"verl 0.6.1 already has trainer.nnodes, and \+ only adds a new key \(.*\); "
        r"drop the \+ to change it \(trainer.nnodes=2\), or write \+\+",
    ):
        treeconfig.check(root, "0.6.1", ["+trainer.nnodes=2"])
    with pytest.raises(UnknownKey, match="this verl tree has no config group nope"):
        treeconfig.check(root, None, ["nope/x=y"])


def test_additions_hydras_own_keys_and_groups_pass(tmp_path: Path) -> None:
    root = _tree(tmp_path, "0.6.1")
    (root / "verl/trainer/config/actor").mkdir()
    treeconfig.check(
        root,
        "0.6.1",
        [
            "+actor_rollout_ref.rollout.engine_kwargs.vllm.attention_backend=FLASH_ATTN",
            "++trainer.nnodes=2",
            "++brand.new=1",
            "~trainer.logger",
            "hydra.run.dir=/tmp/x",
            "hydra/job_logging=disabled",
            "actor@actor_rollout_ref.actor=dp_actor",
            "ray_kwargs.ray_init.num_cpus=null",
        ],
    )


def test_a_stand_in_config_is_not_judged(tmp_path: Path) -> None:
    """A ppo_trainer.yaml without main_ppo's sections, or one that composes others, tells nothing."""
    root = tmp_path / "t"
    (root / "verl/trainer/config").mkdir(parents=True)
    (root / "verl/trainer/config/ppo_trainer.yaml").write_text("ray_kwargs:\n  ray_init: {}\n")
    treeconfig.check(root, "0.9.1", ["anything.at_all=1"])
    (root / "verl/trainer/config/ppo_trainer.yaml").write_text("defaults:\n  - actor@a: dp\ntrainer:\n  x: 1\n")
    treeconfig.check(root, "0.9.1", ["anything.at_all=1"])


def test_plan_checks_profile_and_user_overrides_before_launch(tmp_path: Path) -> None:
    tree = open_tree(_tree(tmp_path, "0.5.0"))
    profiles = load_profiles()
    cluster = Cluster("c", (Host("n", "/r"),), "/r", Path("x.toml"), paths={"DATA_DIR": "/d", "MODEL_PATH": "/m"})
    for profile in profiles.values():
        run.plan(tree, profile, cluster, ["trainer.total_epochs=1"], "python3", tmp_path / "r")
    with pytest.raises(UnknownKey, match=r"override 'trainer.totl_epochs=1': verl 0.5.0 has no key"):
        run.plan(tree, profiles["smoke"], None, ["trainer.totl_epochs=1"], "python3", tmp_path / "r")


@pytest.mark.slow
def test_profiles_on_the_releases(release_tree: Callable[[str], Path], tmp_path: Path) -> None:
    """Every profile's keys exist in verl 0.5.0-0.7.0; on 0.4.1 the smoke profile's loader setting does not,
    which hydra would refuse only after Ray had started: patchctl says so first."""
    profiles = load_profiles()
    cluster = Cluster("c", (Host("n", "/r"),), "/r", Path("x.toml"), paths={"DATA_DIR": "/d", "MODEL_PATH": "/m"})
    for version in RELEASES:
        tree = open_tree(release_tree(version))
        for name, profile in profiles.items():
            if name == "smoke" and version >= "0.6":
                with pytest.raises(RolloutMissing, match="use --profile smoke-vllm"):
                    run.plan(tree, profile, cluster, [], "python3", tmp_path / "r")
            elif (version, name) in (("0.4.1", "smoke"), ("0.4.1", "smoke-vllm")):
                with pytest.raises(UnknownKey) as caught:
                    run.plan(tree, profile, cluster, [], "python3", tmp_path / "r")
                assert str(caught.value).startswith(
                    "override 'data.dataloader_num_workers=0': verl 0.4.1 has no key data.dataloader_num_workers "
                    "(verl/trainer/config/ppo_trainer.yaml)"
                )
            else:
                run.plan(tree, profile, cluster, [], "python3", tmp_path / "r")
        shutil.rmtree(tree.root)


@pytest.mark.parametrize(
    ("override", "accepted"),
    [
        ("trainer.total_epochs=2", True),
        ("trainer.n_gpu=2", False),
        ("+trainer.nnodes=2", False),
        ("+trainer.brand_new=1", True),
        ("~trainer.nope", False),
        ("~trainer.logger", True),
        ("++trainer.nnodes=3", True),
        ("actor_rollout_ref.rollout.engine_kwargs.vllm.x=1", False),
        ("+actor_rollout_ref.rollout.engine_kwargs.vllm.x=1", True),
    ],
)
def test_agrees_with_hydra_compose(override: str, accepted: bool, tmp_path: Path) -> None:
    """hydra composes verl 0.6.1's real config exactly when patchctl lets the key pass. Only
    hydra's refusal of the override counts as a refusal: any other exception (a config it cannot
    find, a broken install) fails the test instead of agreeing with a refusal of ours."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import ConfigCompositionException

    config = tmp_path / "config"
    config.mkdir()
    shutil.copyfile(CONFIGS["0.6.1"], config / "ppo_trainer.yaml")
    try:
        with initialize_config_dir(config_dir=str(config), version_base=None):
            compose(config_name="ppo_trainer", overrides=[override])
        hydra_ok = True
    except ConfigCompositionException:
        hydra_ok = False
    try:
        treeconfig.check(_tree(tmp_path, "0.6.1"), "0.6.1", [override])
        ours = True
    except UnknownKey:
        ours = False
    assert (ours, hydra_ok) == (accepted, accepted)


def test_cli_refuses_before_launch(tree: Path, tmp_path: Path) -> None:
    done = CliRunner().invoke(cli, ["train", "--target", str(tree), "--out", str(tmp_path / "run"), "trainer.n_gpu=2"])
    assert done.exit_code == 2
    assert done.output == (
        "error: override 'trainer.n_gpu=2': verl 0.5.0 has no key trainer.n_gpu "
        "(verl/trainer/config/_generated_ppo_trainer.yaml); check the spelling, or add a new key "
        "with +trainer.n_gpu=2\n"
    )
    assert not (tmp_path / "run").exists() and not (tmp_path / "argv.txt").exists()
