"""Per-version adaptation of the vLLM profiles ([[profile.NAME.adapt]]), as run on verl 0.9.1 + vLLM 0.24."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchctl.clusters import Cluster, Host
from patchctl.errors import ManifestError
from patchctl.target import open_tree
from patchctl.train import run
from patchctl.train.profiles import adapt, load_profile, load_profiles

BACKEND = "+actor_rollout_ref.rollout.engine_kwargs.vllm.attention_backend=FLASH_ATTN"
GONE = ("VLLM_ATTENTION_BACKEND", "VLLM_USE_TRITON_FLASH_ATTN", "VLLM_WORKER_USE_RAY")


def tree_of(root: Path, version: str | None) -> Path:
    (root / "verl/trainer/config").mkdir(parents=True)
    (root / "verl/__init__.py").write_text("")
    (root / "verl/trainer/config/ppo_trainer.yaml").write_text("ray_kwargs:\n  ray_init: {}\n")
    if version:
        (root / "verl/version").mkdir()
        (root / "verl/version/version").write_text(version + "\n")
    return root


def cluster() -> Cluster:
    return Cluster(
        "c", (Host("node1", "/r"),), "/r", Path("patchctl.toml"), paths={"DATA_DIR": "/d", "MODEL_PATH": "/m"}
    )


@pytest.mark.parametrize("name", ["debug", "fast-load", "standard"])
def test_vllm_profiles_adapt_on_verl_09(name: str) -> None:
    profile = load_profile(name)
    assert all(k in profile.env for k in GONE)  # the record's env, as written
    adapted, applied = adapt(profile, "0.9.1")
    assert len(applied) == 1 and applied[0].verl == ">=0.9" and "VLLM_ATTENTION_BACKEND" in applied[0].why
    assert not any(k in adapted.env for k in GONE)
    assert adapted.overrides[-1] == BACKEND and adapted.overrides[:-1] == profile.overrides
    # what vLLM 0.24 still reads is kept
    assert adapted.env["LD_LIBRARY_PATH"] == profile.env["LD_LIBRARY_PATH"]
    assert adapted.env.get("VLLM_WORKER_MULTIPROC_METHOD") == profile.env.get("VLLM_WORKER_MULTIPROC_METHOD")


@pytest.mark.parametrize("version", ["0.5.0", "0.6.1", "0.7.0", "0.8.5", None, "not-a-version"])
def test_older_or_unknown_versions_run_the_record_as_written(version: str | None) -> None:
    profile = load_profile("debug")
    adapted, applied = adapt(profile, version)
    assert applied == () and adapted == profile


def test_smoke_has_no_adaptation() -> None:
    assert load_profiles()["smoke"].adapt == ()


def test_plan_applies_and_records_the_adaptation(tmp_path: Path) -> None:
    for version, expect in (("0.9.1", True), ("0.6.1", False)):
        tree = open_tree(tree_of(tmp_path / version, version))
        plan = run.plan(
            tree, load_profile("fast-load"), cluster(), ["trainer.total_epochs=1"], "python3", tmp_path / "r"
        )
        argv = list(plan.launch.argv)
        assert (BACKEND in argv) is expect
        assert ("VLLM_ATTENTION_BACKEND" in plan.launch.env) is not expect
        assert bool(plan.adapted) is expect
        # the user's overrides still come last
        assert argv[-1] == "trainer.total_epochs=1"


def test_a_user_override_replaces_the_adapted_one(tmp_path: Path) -> None:
    tree = open_tree(tree_of(tmp_path / "t", "0.9.1"))
    mine = "+actor_rollout_ref.rollout.engine_kwargs.vllm.attention_backend=TRITON_ATTN"
    plan = run.plan(tree, load_profile("debug"), cluster(), [mine], "python3", tmp_path / "r")
    assert [a for a in plan.launch.argv if "attention_backend" in a] == [mine]


@pytest.mark.parametrize(
    "table, message",
    [
        ('verl = "0.9"\nwhy = "x"', "not a version range"),
        ('why = "x"', "missing"),
        ('verl = ">=0.9"\nwhy = "x"\nenv = { A = 1 }', "expected a string"),
        ('verl = ">=0.9"\nwhy = "x"\noverrides = ["novalue"]', "not KEY=VALUE"),
        ('verl = ">=0.9"\nwhy = "x"\nextra = 1', "unknown key"),
    ],
)
def test_bad_adapt_tables(tmp_path: Path, table: str, message: str) -> None:
    f = tmp_path / "profiles.toml"
    f.write_text(
        '[profile.p]\ndescription = "d"\nrollout = "vllm"\nassets = "cluster"\noverrides = ["a=1"]\n'
        f"[[profile.p.adapt]]\n{table}\n"
    )
    with pytest.raises(ManifestError, match=message):
        load_profiles(f)


def test_adapt_tables_apply_in_order(tmp_path: Path) -> None:
    f = tmp_path / "profiles.toml"
    f.write_text(
        '[profile.p]\ndescription = "d"\nrollout = "vllm"\nassets = "cluster"\noverrides = ["a=1"]\n'
        '[profile.p.env]\nX = "1"\nY = "2"\n'
        '[[profile.p.adapt]]\nverl = ">=0.8"\nwhy = "one"\nunset_env = ["X"]\noverrides = ["b=2"]\n'
        '[[profile.p.adapt]]\nverl = ">=0.9,<0.10"\nwhy = "two"\nenv = { X = "3" }\noverrides = ["c=3"]\n'
        '[[profile.p.adapt]]\nverl = "<0.8"\nwhy = "never"\noverrides = ["d=4"]\n'
    )
    p = load_profiles(f)["p"]
    adapted, applied = adapt(p, "0.9.1")
    assert [a.why for a in applied] == ["one", "two"]
    assert adapted.env == {"X": "3", "Y": "2"} and adapted.overrides == ("a=1", "b=2", "c=3")
    adapted, applied = adapt(p, "0.8.0")
    assert adapted.env == {"Y": "2"} and adapted.overrides == ("a=1", "b=2")
