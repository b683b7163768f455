"""Per-cluster files: git_ignore.py from the uky example, and the sourceable env file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from patchctl.clusters import Cluster, Host
from patchctl.errors import ManifestError
from patchctl.migrate import render
from patchctl.patchsets.loader import load_patchsets

ALWAYS = {
    "RAY_num_prestart_python_workers": "1",
    "RAY_worker_register_timeout_seconds": "600",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TRITON_CACHE_DIR": "/tmp/triton_cache",
    "VLLM_USE_TRITON_FLASH_ATTN": "0",
    "VLLM_ATTENTION_BACKEND": "FLASH_ATTN",
    "VLLM_WORKER_USE_RAY": "1",
}
FAST_LOAD = {"VLLM_WORKER_MULTIPROC_METHOD": "spawn", "TOKENIZERS_PARALLELISM": "false"}
HOST = Host("node1", "/scratch/verl Uky")


def cluster(**kw: object) -> Cluster:
    return Cluster("gpu", (HOST,), "/root/verl_Uky", Path("/cfg/patchctl.toml"), **kw)


@pytest.fixture(scope="module")
def example() -> Path:
    found = render.find_example(Path("/nonexistent"), load_patchsets(()))
    assert found is not None and found.name == "git_ignore.py.example"
    return found


def run_settings(tmp_path: Path, text: str) -> dict[str, str]:
    (tmp_path / "git_ignore.py").write_text(text)
    out = subprocess.run(
        [sys.executable, "git_ignore.py", "--shell"], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    env = subprocess.run(["bash", "-c", out + "\nenv -0"], capture_output=True, text=True, check=True).stdout
    return dict(item.split("=", 1) for item in env.split("\0") if "=" in item)


def test_git_ignore_gets_the_cluster_paths_and_the_host_root(example: Path, tmp_path: Path) -> None:
    paths = {"DATA_DIR": "/data/fake_dataset", "MODEL_PATH": '/models/Qwen "2.5"', "LOG_DIR": "/logs/ü"}
    files = render.rendered_files(cluster(paths=paths), HOST, example)
    text = files[render.GIT_IGNORE]
    settings = run_settings(tmp_path, text)
    assert settings["VERL_ROOT"] == "/scratch/verl Uky"
    assert settings["DATA_DIR"] == "/data/fake_dataset"
    assert settings["MODEL_PATH"] == '/models/Qwen "2.5"'
    assert settings["LOG_DIR"] == "/logs/ü"
    # unset paths keep the example's values; every other line is untouched
    original = example.read_text().splitlines()
    changed = [(a, b) for a, b in zip(original, text.splitlines(), strict=True) if a != b]
    assert [a.split(" =")[0] for a, _ in changed] == ["VERL_ROOT", "DATA_DIR", "MODEL_PATH", "LOG_DIR"]
    assert 'CHECKPOINT_DIR = "/root/checkpoints/verl_Uky"' in text


def test_unknown_path_key_names_the_key_and_the_choices(example: Path) -> None:
    with pytest.raises(ManifestError) as err:
        render.rendered_files(cluster(paths={"DATA_DIRS": "/d"}), HOST, example)
    assert str(err.value) == (
        "/cfg/patchctl.toml: key 'clusters.gpu.paths.DATA_DIRS': git_ignore.py.example has no "
        "setting DATA_DIRS; use one of: VERL_ROOT, DATA_DIR, MODEL_PATH, CHECKPOINT_DIR, LOG_DIR"
    )


def test_paths_without_an_example_is_an_error() -> None:
    with pytest.raises(ManifestError, match=r"clusters.gpu.paths.*patchctl apply"):
        render.rendered_files(cluster(paths={"DATA_DIR": "/d"}), HOST, None)
    assert list(render.rendered_files(cluster(), HOST, None)) == [render.ENV_FILE]


def source(text: str, tmp_path: Path, ld: str = "/opt/lib") -> dict[str, str]:
    (tmp_path / "env.sh").write_text(text)
    out = subprocess.run(
        ["bash", "-c", f". {tmp_path / 'env.sh'} && env -0"],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": ld},
    ).stdout
    return dict(item.split("=", 1) for item in out.split("\0") if "=" in item)


@pytest.mark.parametrize("profile, extra", [("standard", {}), ("fast-load", FAST_LOAD)])
def test_env_file_holds_the_record_variables_for_the_profile(
    profile: str, extra: dict[str, str], tmp_path: Path
) -> None:
    text = render.render_env(cluster(profile=profile, env={"WANDB_MODE": "offline $NOT_EXPANDED"}), HOST)
    env = source(text, tmp_path)
    for key, value in {**ALWAYS, **extra}.items():
        assert env[key] == value
    assert env["LD_LIBRARY_PATH"] == "/usr/local/cuda/lib64/stubs:/opt/lib"
    assert env["WANDB_MODE"] == "offline $NOT_EXPANDED"
    if profile == "standard":
        assert not set(FAST_LOAD) & set(env)
    assert "export LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs:$LD_LIBRARY_PATH" in text.splitlines()


def test_env_key_must_be_a_shell_name() -> None:
    with pytest.raises(ManifestError, match=r"clusters.gpu.env.BAD-NAME': is not a shell variable name"):
        render.render_env(cluster(env={"BAD-NAME": "1"}), HOST)
