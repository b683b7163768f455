"""Checks of the files the built-in ``uky`` patchset adds to a verl tree.

They cover the content files themselves (the training scripts, git_ignore.py.example
and the helper scripts) without applying the patchset: the exact ``# Uky`` lines of
the modification record, shell syntax, the hydra override keys against verl 0.6.1's
config, and that each helper runs on a CPU-only machine.
"""

from __future__ import annotations

import json
import os
import py_compile
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FILES = REPO / "src" / "patchctl" / "patchsets" / "builtin" / "uky" / "files"
SCRIPT_DIR = FILES / "examples" / "grpo_trainer"
STANDARD = SCRIPT_DIR / "run_qwen2_5_vl-3b_fake_dataset.sh"
DEBUG = SCRIPT_DIR / "run_qwen2_5_vl-3b_fake_dataset_DEBUG.sh"
FAST_LOAD = SCRIPT_DIR / "run_qwen2_5_vl-3b_fake_dataset_FAST_LOAD.sh"
SCRIPTS = (STANDARD, DEBUG, FAST_LOAD)
PY_FILES = ("test_components.py", "warmup_model.py", "create_tiny_dataset.py", "fix_triton.py", "git_ignore.py.example")
GIT_IGNORE_NAMES = ("VERL_ROOT", "DATA_DIR", "MODEL_PATH", "CHECKPOINT_DIR", "LOG_DIR")

# Quoted byte for byte from the modification record.
RECORD_LINES = (
    "export TRITON_CACHE_DIR=/tmp/triton_cache  # Uky",
    "export VLLM_USE_TRITON_FLASH_ATTN=0  # Uky - Disable Triton flash attention",
    "# export VLLM_ATTENTION_BACKEND=TORCH_SDPA  # Uky - TORCH_SDPA not implemented in vLLM 0.12.0",
    "export VLLM_ATTENTION_BACKEND=FLASH_ATTN  # Uky - Use CUDA FlashAttention (not Triton version)",
    "export VLLM_WORKER_USE_RAY=1  # Uky - Force Ray worker mode",
    "export LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs:$LD_LIBRARY_PATH  # Uky",
)
ALWAYS_EXPORTS = {
    "RAY_num_prestart_python_workers": "1",
    "RAY_worker_register_timeout_seconds": "600",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
FAST_LOAD_EXPORTS = {"VLLM_WORKER_MULTIPROC_METHOD": "spawn", "TOKENIZERS_PARALLELISM": "false"}

# The overrides the record prescribes for each script (values as hydra receives them).
RECORD_OVERRIDES = {
    STANDARD.name: {
        "data.train_batch_size": "4",
        "data.max_prompt_length": "10240",
        "data.max_response_length": "512",
        "trainer.total_epochs": "20",
        "actor_rollout_ref.rollout.gpu_memory_utilization": "0.3",
        "actor_rollout_ref.rollout.enforce_eager": "False",
    },
    DEBUG.name: {
        "data.train_batch_size": "1",
        "data.max_prompt_length": "512",
        "data.max_response_length": "64",
        "trainer.total_epochs": "1",
        "trainer.logger": '["console"]',
        "trainer.save_freq": "999",
        "trainer.test_freq": "999",
    },
    FAST_LOAD.name: {
        "data.train_batch_size": "4",
        "data.max_prompt_length": "10240",
        "data.max_response_length": "512",
        "trainer.total_epochs": "20",
        "actor_rollout_ref.rollout.enforce_eager": "True",
        "actor_rollout_ref.rollout.load_format": "safetensors",
        "actor_rollout_ref.rollout.gpu_memory_utilization": "0.4",
    },
}

CACHE_DIR = Path(os.environ.get("PATCHCTL_TEST_CACHE", Path.home() / ".cache" / "patchctl-test"))
VERL_VERSION = "0.6.1"

STUB_MAIN_PPO = """\
import json, os, sys
with open(os.environ["STUB_OUT"], "w") as handle:
    json.dump({"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd(), "file": __file__}, handle)
print("stub main_ppo ran")
"""


def _bash() -> str:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not available")
    return bash


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _render_git_ignore(text: str, values: dict[str, str]) -> str:
    """Replace the string values the way a renderer of the example would."""
    for name, value in values.items():
        pattern = re.compile(rf'^{name} = "[^"\n]*"$', re.MULTILINE)
        assert len(pattern.findall(text)) == 1, name
        text = pattern.sub(lambda _m, name=name, value=value: f"{name} = {json.dumps(value)}", text)
    return text


# ---------------------------------------------------------------------------
# Training scripts: record lines, tags, syntax.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_record_lines_present_byte_exact(script: Path) -> None:
    lines = _lines(script)
    for expected in RECORD_LINES:
        assert expected in lines, f"{script.name} lacks the record line: {expected}"
    for name, value in ALWAYS_EXPORTS.items():
        assert f"export {name}={value}  # Uky" in lines, f"{script.name} lacks {name}"


def test_fast_load_extra_exports() -> None:
    lines = _lines(FAST_LOAD)
    for name, value in FAST_LOAD_EXPORTS.items():
        assert any(line.startswith(f"export {name}={value}  # Uky - ") for line in lines), name
    for other in (STANDARD, DEBUG):
        text = other.read_text(encoding="utf-8")
        for name in FAST_LOAD_EXPORTS:
            assert f"export {name}=" not in text, f"{other.name} should not export {name}"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_export_is_tagged(script: Path) -> None:
    for line in _lines(script):
        if line.lstrip().startswith("export "):
            assert re.search(r"  # Uky( - .+)?$", line), f"untagged export in {script.name}: {line}"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_syntax_and_mode(script: Path) -> None:
    result = subprocess.run([_bash(), "-n", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    text = script.read_text(encoding="utf-8")
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail" in text
    assert 'eval "$(python3 "$ROOT/git_ignore.py" --shell)"' in text
    assert os.access(script, os.X_OK), f"{script.name} is not executable"


# ---------------------------------------------------------------------------
# Running the scripts against a stub verl.
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stub_tree(tmp_path_factory) -> dict:
    """A fake verl tree: the uky files, a stub verl.trainer.main_ppo, data and model dirs."""
    base = tmp_path_factory.mktemp("stub")
    tree = base / "verl tree"  # a space in the path on purpose
    shutil.copytree(FILES, tree)
    trainer = tree / "verl" / "trainer"
    trainer.mkdir(parents=True)
    (tree / "verl" / "__init__.py").write_text("__version__ = 'stub'\n")
    (trainer / "__init__.py").write_text("")
    (trainer / "main_ppo.py").write_text(STUB_MAIN_PPO)
    values = {
        "VERL_ROOT": str(tree),
        "DATA_DIR": str(base / "data"),
        "MODEL_PATH": str(base / "model"),
        "CHECKPOINT_DIR": str(base / "ckpt"),
        "LOG_DIR": str(base / "logs"),
    }
    (base / "data").mkdir()
    for name in ("train.parquet", "test.parquet", "train_tiny.parquet"):
        (base / "data" / name).write_bytes(b"")
    (base / "model").mkdir()
    example = (tree / "git_ignore.py.example").read_text(encoding="utf-8")
    (tree / "git_ignore.py").write_text(_render_git_ignore(example, values), encoding="utf-8")
    return {"base": base, "tree": tree, "values": values}


def _run_script(
    stub: dict, script: Path, *extra: str, env_extra: dict | None = None
) -> tuple[subprocess.CompletedProcess, dict]:
    out = stub["base"] / f"{script.stem}.json"
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    env.update({"STUB_OUT": str(out)})
    env.update(env_extra or {})
    target = stub["tree"] / "examples" / "grpo_trainer" / script.name
    result = subprocess.run([_bash(), str(target), *extra], capture_output=True, text=True, env=env, cwd="/")
    data = json.loads(out.read_text()) if result.returncode == 0 else {}
    return result, data


def _overrides(argv: list[str]) -> dict[str, str]:
    pairs = {}
    for arg in argv:
        key, sep, value = arg.partition("=")
        assert sep, f"not a hydra override: {arg}"
        pairs[key.lstrip("+~")] = value
    return pairs


@pytest.fixture(scope="module")
def script_runs(stub_tree) -> dict:
    runs = {}
    for script in SCRIPTS:
        result, data = _run_script(stub_tree, script, "trainer.nnodes=1")
        assert result.returncode == 0, result.stdout + result.stderr
        runs[script.name] = data
    return runs


def test_scripts_run_with_unset_ld_library_path(stub_tree, script_runs) -> None:
    tree = str(stub_tree["tree"])
    for name, data in script_runs.items():
        env = data["env"]
        assert env["LD_LIBRARY_PATH"] == "/usr/local/cuda/lib64/stubs", name
        assert env["PYTHONPATH"].split(":")[0] == tree, name
        assert os.path.realpath(data["cwd"]) == os.path.realpath(tree), name
        assert os.path.realpath(data["file"]).startswith(os.path.realpath(tree)), name
        for key, value in {
            **ALWAYS_EXPORTS,
            "TRITON_CACHE_DIR": "/tmp/triton_cache",
            "VLLM_USE_TRITON_FLASH_ATTN": "0",
            "VLLM_ATTENTION_BACKEND": "FLASH_ATTN",
            "VLLM_WORKER_USE_RAY": "1",
        }.items():
            assert env[key] == value, (name, key)
        for key in GIT_IGNORE_NAMES:
            assert env[key] == stub_tree["values"][key], (name, key)
        if name == FAST_LOAD.name:
            for key, value in FAST_LOAD_EXPORTS.items():
                assert env[key] == value


def test_scripts_pass_record_overrides_and_user_args_last(script_runs) -> None:
    for name, data in script_runs.items():
        argv = data["argv"]
        assert argv[-1] == "trainer.nnodes=1", "user overrides must come last"
        overrides = _overrides(argv[:-1])
        for key, value in RECORD_OVERRIDES[name].items():
            assert overrides.get(key) == value, (name, key, overrides.get(key))
        assert overrides["algorithm.adv_estimator"] == "grpo"
        assert overrides["actor_rollout_ref.rollout.name"] == "vllm"
        assert overrides["actor_rollout_ref.actor.strategy"] == "fsdp"
        assert overrides["actor_rollout_ref.model.path"] == data["env"]["MODEL_PATH"]
        data_dir = data["env"]["DATA_DIR"]
        expected_train = "train_tiny.parquet" if name == DEBUG.name else "train.parquet"
        assert overrides["data.train_files"] == f"{data_dir}/{expected_train}"
        assert len(argv[:-1]) == len(overrides), f"{name} repeats an override"


def test_batch_sizes_are_consistent(script_runs) -> None:
    """The same arithmetic verl 0.6.1 checks (utils/config.py, workers/fsdp_workers.py)."""
    for name, data in script_runs.items():
        o = _overrides(data["argv"])
        n_gpus = int(o["trainer.n_gpus_per_node"]) * int(o["trainer.nnodes"])
        batch = int(o["data.train_batch_size"])
        n = int(o["actor_rollout_ref.rollout.n"])
        mini = int(o["actor_rollout_ref.actor.ppo_mini_batch_size"])
        micro = int(o["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"])
        assert n >= 2, f"{name}: GRPO needs at least 2 samples per prompt"
        assert mini <= batch, name
        assert (batch * n) % n_gpus == 0, name
        normalized = mini * n // n_gpus
        assert normalized > 0 and normalized % micro == 0, name
        assert "actor_rollout_ref.actor.ppo_micro_batch_size" not in o
        # chunked prefill is on by default: the token budget must cover a whole sequence
        model_len = int(o["data.max_prompt_length"]) + int(o["data.max_response_length"])
        assert int(o.get("actor_rollout_ref.rollout.max_num_batched_tokens", 8192)) >= model_len, name


def test_debug_script_fits_two_gpus(stub_tree) -> None:
    result, data = _run_script(stub_tree, DEBUG, env_extra={"N_GPUS_PER_NODE": "2"})
    assert result.returncode == 0, result.stderr
    o = _overrides(data["argv"])
    assert o["trainer.n_gpus_per_node"] == "2"
    assert int(o["actor_rollout_ref.actor.ppo_mini_batch_size"]) * int(o["actor_rollout_ref.rollout.n"]) // 2 >= 1


def test_log_file_written(stub_tree, script_runs) -> None:
    logs = list(Path(stub_tree["values"]["LOG_DIR"]).glob("*.log"))
    assert logs and any("stub main_ppo ran" in p.read_text() for p in logs)


def test_missing_git_ignore_is_one_clear_line(tmp_path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(FILES, tree)
    result = subprocess.run(
        [_bash(), str(tree / "examples" / "grpo_trainer" / DEBUG.name)], capture_output=True, text=True
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cp git_ignore.py.example git_ignore.py" in lines[0], result.stderr


@pytest.mark.parametrize(
    "content, message",
    [("raise SystemExit('broken')\n", "--shell' failed"), ("OTHER = '/x'\n", "does not set VERL_ROOT")],
    ids=["crashes", "old-style"],
)
def test_bad_git_ignore_is_reported(tmp_path, content: str, message: str) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(FILES, tree)
    (tree / "git_ignore.py").write_text(content)
    env = {k: v for k, v in os.environ.items() if k not in GIT_IGNORE_NAMES}
    result = subprocess.run(
        [_bash(), str(tree / "examples" / "grpo_trainer" / STANDARD.name)], capture_output=True, text=True, env=env
    )
    assert result.returncode == 1
    assert message in result.stderr, result.stderr


def test_missing_data_fails_fast(stub_tree, tmp_path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(stub_tree["tree"], tree)
    values = dict(stub_tree["values"], VERL_ROOT=str(tree), DATA_DIR=str(tmp_path / "nodata"))
    example = (tree / "git_ignore.py.example").read_text(encoding="utf-8")
    (tree / "git_ignore.py").write_text(_render_git_ignore(example, values), encoding="utf-8")
    result = subprocess.run(
        [_bash(), str(tree / "examples" / "grpo_trainer" / DEBUG.name)],
        capture_output=True,
        text=True,
        env={**os.environ, "STUB_OUT": str(tmp_path / "o.json")},
    )
    assert result.returncode == 1
    assert "train_tiny.parquet" in result.stderr and "create_tiny_dataset.py" in result.stderr
    assert not (tmp_path / "o.json").exists()


# ---------------------------------------------------------------------------
# Override keys against verl 0.6.1's hydra config.
# ---------------------------------------------------------------------------


def _verl_source() -> Path:
    """An extracted verl 0.6.1 source tree, downloaded once into the cache directory."""
    explicit = os.environ.get("PATCHCTL_VERL_061_SRC")
    if explicit:
        return Path(explicit)
    extracted = CACHE_DIR / f"verl-{VERL_VERSION}"
    if (extracted / "verl" / "trainer" / "config" / "ppo_trainer.yaml").is_file():
        return extracted
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    archive = CACHE_DIR / f"verl-{VERL_VERSION}.tar.gz"
    if not archive.is_file():
        try:
            result = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--no-binary",
                    ":all:",
                    f"verl=={VERL_VERSION}",
                    "-d",
                    str(CACHE_DIR),
                    "--disable-pip-version-check",
                    "-q",
                ],
                capture_output=True,
                text=True,
                timeout=300,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"cannot download verl {VERL_VERSION}: {exc}")
        if result.returncode != 0 or not archive.is_file():
            pytest.skip(f"cannot download verl {VERL_VERSION} (offline?): {result.stderr.strip()[-300:]}")
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if "/verl/trainer/config/" in m.name and (m.isfile() or m.isdir())]
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(CACHE_DIR, members=members, **safe)  # noqa: S202 - the data filter, where Python has it
    return extracted


@pytest.fixture(scope="module")
def verl_config() -> dict:
    yaml = pytest.importorskip("yaml")
    src = _verl_source()
    generated = src / "verl" / "trainer" / "config" / "_generated_ppo_trainer.yaml"
    if not generated.is_file():
        pytest.skip(f"{generated} not found")
    return {"src": src, "flat": yaml.safe_load(generated.read_text(encoding="utf-8"))}


def _has_key(config: dict, dotted: str) -> bool:
    node = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


@pytest.mark.slow
def test_override_keys_exist_in_verl_061_config(verl_config, script_runs) -> None:
    flat = verl_config["flat"]
    for name, data in script_runs.items():
        missing = [key for key in _overrides(data["argv"]) if not _has_key(flat, key)]
        assert not missing, f"{name}: keys not in verl {VERL_VERSION}'s ppo_trainer config: {missing}"


@pytest.mark.slow
def test_overrides_compose_with_hydra(verl_config, script_runs) -> None:
    """Stronger check where hydra is installed: compose verl's real config with the overrides."""
    hydra = pytest.importorskip("hydra")
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    config_dir = str(verl_config["src"] / "verl" / "trainer" / "config")
    for name, data in script_runs.items():
        with initialize_config_dir(config_dir=config_dir, version_base=None):
            cfg = compose(config_name="ppo_trainer", overrides=data["argv"])
        assert cfg.algorithm.adv_estimator == "grpo", name
        assert OmegaConf.select(cfg, "actor_rollout_ref.rollout.name") == "vllm", name
        assert hydra is not None


# ---------------------------------------------------------------------------
# git_ignore.py.example
# ---------------------------------------------------------------------------


def test_git_ignore_example_form() -> None:
    text = (FILES / "git_ignore.py.example").read_text(encoding="utf-8")
    for name in GIT_IGNORE_NAMES:
        found = re.findall(rf'^{name} = "([^"\n]*)"$', text, re.MULTILINE)
        assert len(found) == 1, name
        assert found[0].startswith("/root/"), name


def test_git_ignore_shell_round_trip(tmp_path) -> None:
    values = {
        "VERL_ROOT": "/tmp/verl root",
        "DATA_DIR": "/data/it's here",
        "MODEL_PATH": "/models/$HOME/`x`",
        "CHECKPOINT_DIR": "/ckpt/a;b",
        "LOG_DIR": "/logs/\\back",
    }
    example = (FILES / "git_ignore.py.example").read_text(encoding="utf-8")
    target = tmp_path / "git_ignore.py"
    target.write_text(_render_git_ignore(example, values), encoding="utf-8")

    shell = subprocess.run([sys.executable, str(target), "--shell"], capture_output=True, text=True, check=True)
    exports = shell.stdout.strip().splitlines()
    assert [line.split("=", 1)[0] for line in exports] == [f"export {n}" for n in GIT_IGNORE_NAMES]

    script = (
        'eval "$(python3 "$1" --shell)"; for n in ' + " ".join(GIT_IGNORE_NAMES) + ' ; do printf "%s\\0" "${!n}"; done'
    )
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    result = subprocess.run([_bash(), "-c", script, "bash", str(target)], capture_output=True, env=env, check=True)
    got = result.stdout.decode().split("\0")[:-1]
    assert got == [values[n] for n in GIT_IGNORE_NAMES]

    plain = subprocess.run([sys.executable, str(target)], capture_output=True, text=True, check=True).stdout
    for name in GIT_IGNORE_NAMES:
        assert re.search(rf"^{name}\s+= {re.escape(values[name])}$", plain, re.MULTILINE), name


# ---------------------------------------------------------------------------
# Helper scripts.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", PY_FILES)
def test_python_files_compile(name: str, tmp_path) -> None:
    source = FILES / name
    py_compile.compile(str(source), cfile=str(tmp_path / "out.pyc"), doraise=True)


def test_no_chinese_text_left() -> None:
    for path in FILES.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:  # bytecode a local run may leave
            text = path.read_text(encoding="utf-8")
            assert not re.search(r"[\u3000-\u9fff\uff00-\uffef]", text), path


def _png_info(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, size = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        payload = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + payload) & 0xFFFFFFFF
        if kind == b"IHDR":
            size = struct.unpack(">II", payload[:8])
        elif kind == b"IDAT":
            idat += payload
        pos += 12 + length
    assert size is not None
    width, height = size
    assert len(zlib.decompress(idat)) == height * (1 + 3 * width)
    return width, height


def test_create_tiny_dataset_writes_two_rows(tmp_path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, str(FILES / "create_tiny_dataset.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    df = pd.read_parquet(out / "train_tiny.parquet")
    assert len(df) == 2
    assert list(df.columns) == ["data_source", "prompt", "images", "ability", "reward_model", "extra_info"]
    for i, row in df.iterrows():
        assert row["data_source"] == "hiyouga/geometry3k"
        messages = list(row["prompt"])
        assert messages[0]["role"] == "user"
        images = list(row["images"])
        assert messages[0]["content"].count("<image>") == len(images) == 1
        width, height = _png_info(images[0]["bytes"])
        assert width % 28 == 0 and height % 28 == 0
        assert row["reward_model"]["style"] == "rule"
        assert row["reward_model"]["ground_truth"] == row["extra_info"]["answer"]
        assert row["extra_info"]["split"] == "train" and row["extra_info"]["index"] == i


def test_create_tiny_dataset_env_dir_and_samples(tmp_path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    env = dict(os.environ, DATA_OUTPUT_DIR=str(tmp_path / "env"))
    result = subprocess.run(
        [sys.executable, str(FILES / "create_tiny_dataset.py"), "--samples", "5"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert len(pd.read_parquet(tmp_path / "env" / "train_tiny.parquet")) == 5


def test_test_components_on_cpu_machine(tmp_path) -> None:
    try:
        import vllm  # noqa: F401 - only whether it imports
    except ImportError:
        pass
    else:
        pytest.skip("vLLM is installed here; the missing-vLLM report cannot be checked")
    env = {k: v for k, v in os.environ.items() if k != "DATA_DIR"}
    script = str(FILES / "test_components.py")
    result = subprocess.run(
        [sys.executable, script], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Traceback" not in output
    assert re.search(r"^\[FAIL\] vLLM import\s+\(\s*[\d.]+s\)", result.stdout, re.MULTILINE), output
    for title in ("PyTorch + CUDA", "Data files", "vLLM import", "verl import", "Ray init/shutdown"):
        assert re.search(rf"^\[(PASS|FAIL)\] {re.escape(title)}", result.stdout, re.MULTILINE), title

    as_json = subprocess.run(
        [sys.executable, script, "--json"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["ok"] is False
    assert checks["vllm"]["ok"] is False and "not installed" in checks["vllm"]["detail"]
    assert set(checks) == {"torch_cuda", "data_files", "vllm", "verl", "ray"}


def test_test_components_data_check_uses_env(tmp_path) -> None:
    for name in ("train.parquet", "test.parquet", "train_tiny.parquet"):
        (tmp_path / name).write_bytes(b"x")
    env = dict(os.environ, DATA_DIR=str(tmp_path))
    result = subprocess.run(
        [sys.executable, str(FILES / "test_components.py"), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["data_files"]["ok"] is True, checks["data_files"]


def test_warmup_model_reads_files(tmp_path) -> None:
    model = tmp_path / "model"
    (model / "sub").mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (model / "sub" / "model-00001.safetensors").write_bytes(os.urandom(3_000_000))
    (model / "weights.bin").write_bytes(os.urandom(1_000_000))
    (model / "README.md").write_text("not read")
    result = subprocess.run(
        [sys.executable, str(FILES / "warmup_model.py"), str(model), "--chunk-mb", "1"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "MB/s" in result.stdout
    assert "3 file(s)" in result.stdout and "README" not in result.stdout

    missing = subprocess.run(
        [sys.executable, str(FILES / "warmup_model.py"), str(tmp_path / "nope")], capture_output=True, text=True
    )
    assert missing.returncode != 0 and "Traceback" not in missing.stderr


def test_fix_triton(tmp_path, monkeypatch) -> None:
    import importlib.util

    monkeypatch.setenv("LD_LIBRARY_PATH", "/opt/lib")
    monkeypatch.delenv("TRITON_LIBCUDA_PATH", raising=False)
    spec = importlib.util.spec_from_file_location("fix_triton_under_test", FILES / "fix_triton.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    stubs = tmp_path / "stubs"
    stubs.mkdir()
    env = {"LD_LIBRARY_PATH": "/a:/b"}
    assert module.apply(str(stubs), env) == {"LD_LIBRARY_PATH": f"{stubs}:/a:/b"}
    assert module.apply(str(stubs), env) == {}  # idempotent
    (stubs / "libcuda.so").write_bytes(b"")
    env = {}
    changed = module.apply(str(stubs), env)
    assert env["LD_LIBRARY_PATH"] == str(stubs) and changed["TRITON_LIBCUDA_PATH"] == str(stubs)
    assert module.apply(str(tmp_path / "absent"), {}) == {}


def test_docs_cover_the_known_errors() -> None:
    tips = (FILES / "DEBUG_TIPS.md").read_text(encoding="utf-8")
    card = (FILES / "QUICK_FIX.md").read_text(encoding="utf-8")
    for needle in (
        "disable_log_requests",
        "cannot find -lcuda",
        "Backend TORCH_SDPA must be registered before use",
        "Failed to register worker to Raylet",
        "ray_init.num_cpus",
        "load_format=safetensors",
        "enforce_eager=True",
        "warmup_model.py",
        "test_components.py",
    ):
        assert needle in tips, needle
        assert needle in card, needle
