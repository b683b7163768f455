"""vLLM's model-info cache written beside the launch (train/modelinfo.py).

vLLM cannot be installed on the CPU test machine, so its registry is a stand-in holding the
vLLM 0.24 code this relies on (``_LazyRegisteredModel``'s cache methods, ``_ModelInfo``,
``safe_hash``), copied in behaviour; the H100 runs in docs/validation/vllm-smoke/ use the real one.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchctl.cli.main import cli
from patchctl.train import modelinfo

REGISTRY = """
import hashlib, importlib, json, os
from dataclasses import asdict, dataclass
from pathlib import Path

@dataclass(frozen=True)
class _ModelInfo:
    architecture: str
    is_text_generation_model: bool

    @staticmethod
    def from_model_cls(model):
        return _ModelInfo(architecture=model.__name__, is_text_generation_model=True)

@dataclass(frozen=True)
class _LazyRegisteredModel:
    module_name: str
    class_name: str

    @staticmethod
    def _get_cache_dir():
        return Path(os.environ["VLLM_CACHE_ROOT"]) / "modelinfos"

    def _get_cache_filename(self):
        return f"{self.module_name}-{self.class_name}".replace(".", "-") + ".json"

    def _load_modelinfo_from_cache(self, module_hash):
        try:
            d = json.loads((self._get_cache_dir() / self._get_cache_filename()).read_text())
        except FileNotFoundError:
            return None
        return _ModelInfo(**d["modelinfo"]) if d["hash"] == module_hash else None

    def _save_modelinfo_to_cache(self, mi, module_hash):
        self._get_cache_dir().mkdir(parents=True, exist_ok=True)
        (self._get_cache_dir() / self._get_cache_filename()).write_text(
            json.dumps({"hash": module_hash, "modelinfo": asdict(mi)}))

    def load_model_cls(self):
        return getattr(importlib.import_module(self.module_name), self.class_name)

class _ModelRegistry:
    models = {"Qwen2ForCausalLM": _LazyRegisteredModel("vllm.model_executor.models.qwen2", "Qwen2ForCausalLM")}

ModelRegistry = _ModelRegistry()
"""


def stand_in_vllm(root: Path) -> Path:
    models = root / "vllm/model_executor/models"
    models.mkdir(parents=True)
    for pkg in (root / "vllm", root / "vllm/model_executor", models, root / "vllm/utils"):
        pkg.mkdir(exist_ok=True)
        (pkg / "__init__.py").write_text("")
    (models / "registry.py").write_text(REGISTRY)
    (models / "qwen2.py").write_text("class Qwen2ForCausalLM:\n    pass\n")
    (root / "vllm/utils/hashing.py").write_text(
        "import hashlib\ndef safe_hash(data, usedforsecurity=True):\n"
        "    return hashlib.md5(data, usedforsecurity=usedforsecurity)\n"
    )
    return root


def model_dir(root: Path, arch: str = "Qwen2ForCausalLM") -> Path:
    root.mkdir(parents=True)
    (root / "config.json").write_text(json.dumps({"architectures": [arch]}))
    return root


def warm(model: Path, site: Path | None, cache: Path) -> str:
    """The trainer side, as ``Warming`` runs it: the package booted bare in another interpreter."""
    env = {"VLLM_CACHE_ROOT": str(cache), "PATH": "/usr/bin:/bin", **({"PYTHONPATH": str(site)} if site else {})}
    package = Path(modelinfo.__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", modelinfo.BOOT, str(package), str(model)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


CACHED = "modelinfos/vllm-model_executor-models-qwen2-Qwen2ForCausalLM.json"


def test_writes_the_cache_vllm_reads_then_finds_it_current(tmp_path: Path) -> None:
    site, model, cache = stand_in_vllm(tmp_path / "site"), model_dir(tmp_path / "model"), tmp_path / "cache"
    out = warm(model, site, cache)
    assert out.startswith(f"Qwen2ForCausalLM: written to {cache / CACHED}"), out
    doc = json.loads((cache / CACHED).read_text())
    module = site / "vllm/model_executor/models/qwen2.py"
    assert doc == {
        "hash": hashlib.md5(module.read_bytes(), usedforsecurity=False).hexdigest(),
        "modelinfo": {"architecture": "Qwen2ForCausalLM", "is_text_generation_model": True},
    }
    assert warm(model, site, cache).startswith("Qwen2ForCausalLM: cache already current")
    # the model's module changed (a vLLM upgrade): the entry is stale and written again
    module.write_text("class Qwen2ForCausalLM:\n    x = 1\n")
    assert warm(model, site, cache).startswith("Qwen2ForCausalLM: written to")


@pytest.mark.parametrize("case", ["no-vllm", "unknown-arch", "no-config"])
def test_writes_nothing_and_exits_0_where_it_cannot_help(tmp_path: Path, case: str) -> None:
    site = None if case == "no-vllm" else stand_in_vllm(tmp_path / "site")
    model = model_dir(tmp_path / "model", "MadeUpForCausalLM" if case == "unknown-arch" else "Qwen2ForCausalLM")
    if case == "no-config":
        (model / "config.json").unlink()
    out = warm(model, site, tmp_path / "cache")
    assert (
        "nothing written: "
        + {
            "no-vllm": "vllm does not import here",
            "unknown-arch": "not a lazily registered",
            "no-config": "cannot read the architectures",
        }[case]
        in out
    )
    assert not (tmp_path / "cache").exists()


def test_warming_runs_in_the_background_and_stop_ends_it(tmp_path: Path) -> None:
    site, model, cache = stand_in_vllm(tmp_path / "site"), model_dir(tmp_path / "model"), tmp_path / "cache"
    env = {"VLLM_CACHE_ROOT": str(cache), "PYTHONPATH": str(site)}
    w = modelinfo.Warming(sys.executable, model, env, tmp_path / "warm.log")
    deadline = time.monotonic() + 60
    while not (cache / CACHED).is_file() and time.monotonic() < deadline:
        time.sleep(0.1)
    w.stop()
    assert (cache / CACHED).is_file()
    # a slow one (vLLM's import, here a sleep) is ended when the run ends first
    (site / "vllm/__init__.py").write_text("import time; time.sleep(60)\n")
    slow = modelinfo.Warming(
        sys.executable, model, {**env, "VLLM_CACHE_ROOT": str(tmp_path / "c2")}, tmp_path / "slow.log"
    )
    started = time.monotonic()
    slow.stop()
    assert time.monotonic() - started < 10 and not (tmp_path / "c2").exists()
    # an interpreter that does not exist is said in its log, and the run goes on
    modelinfo.Warming(str(tmp_path / "no-python"), model, env, tmp_path / "none.log").stop()
    assert (tmp_path / "none.log").read_text().startswith("not started:")


@pytest.mark.parametrize("profile", ["smoke-vllm", "smoke"])
def test_train_starts_it_for_vllm_profiles_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, profile: str) -> None:
    """End to end with the stand-in trainer (verl 0.6.1 tree; 0.5.0 for the HF smoke)."""
    pytest.importorskip("tokenizers")
    pytest.importorskip("pyarrow")
    from standin import FIXTURE, stand_in

    monkeypatch.setenv("FAKE_LOG", str(FIXTURE))
    monkeypatch.setenv("FAKE_ARGV", str(tmp_path / "argv.txt"))
    version = "0.6.1" if profile == "smoke-vllm" else "0.5.0"
    tree = stand_in(tmp_path / f"verl-{version}", version)
    run_dir = tmp_path / "run"
    done = CliRunner().invoke(
        cli, ["train", "--target", str(tree), "--profile", profile, "--out", str(run_dir), "--json"]
    )
    assert (run_dir / "report.json").is_file(), done.output
    assert (run_dir / modelinfo.LOG_NAME).is_file() == (profile == "smoke-vllm")
