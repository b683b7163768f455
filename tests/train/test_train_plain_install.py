"""``patchctl train`` needs none of verl's heavy packages in patchctl's own process (issue 10, req. 7).

A plain ``pip install patchctl`` has no numpy, torch, transformers, pandas, pyarrow, tokenizers
or matplotlib. These tests run the real ``patchctl`` in a subprocess whose imports of those
fail (a ``sys.meta_path`` blocker), while the trainer's interpreter, which builds the smoke
model and data, keeps them, as verl's own environment does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from patchctl.train import assets

HEAVY = (
    "numpy",
    "torch",
    "transformers",
    "pandas",
    "pyarrow",
    "tokenizers",
    "matplotlib",
    "safetensors",
    "yaml",
    "hydra",
    "omegaconf",
    "ray",
    "vllm",
)
BLOCKER = f"""
import sys
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {HEAVY!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked: a plain pip install has none)")
sys.meta_path.insert(0, Blocker())
"""


def _patchctl(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    code = BLOCKER + "from patchctl.cli.main import main\nsys.argv[0] = 'patchctl'\nmain()\n"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def test_the_blocker_blocks() -> None:
    done = subprocess.run([sys.executable, "-c", BLOCKER + "import numpy"], capture_output=True, text=True)
    assert done.returncode == 1 and "blocked" in done.stderr


def test_dry_run_without_heavy_packages(tree: Path, tmp_path: Path) -> None:
    for profile in ("smoke", "debug"):
        done = _patchctl(
            "train",
            "--target",
            str(tree),
            "--profile",
            profile,
            "--dry-run",
            "--json",
            env={"MODEL_PATH": "/m", "DATA_DIR": "/d"},
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["command"][1:3] == ["-m", "verl.trainer.main_ppo"]


def test_bad_input_is_still_one_line_without_heavy_packages(tree: Path) -> None:
    done = _patchctl("train", "--target", str(tree), "--dry-run", "trainer n=2")
    assert done.returncode == 2
    assert done.stderr.startswith("error: override 'trainer n=2': hydra cannot read ' n=2' at column 8;")
    assert done.stderr.count("\n") == 1


def test_smoke_run_without_heavy_packages(tree: Path, tmp_path: Path) -> None:
    """The whole in-process path: plan, assets (built by the trainer's interpreter), launch, gates, report."""
    pytest.importorskip("tokenizers")
    pytest.importorskip("pyarrow")
    run = tmp_path / "run"
    done = _patchctl("train", "--target", str(tree), "--out", str(run), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert doc["verdict"] == "pass"
    assert (run / "assets/model/model.safetensors").is_file() and (run / "assets/data/train.parquet").is_file()
    # matplotlib is one of the blocked packages: the report says so instead of failing
    assert doc["plot"].startswith("none")
    assert doc["settings"]["MODEL_PATH"] == {"value": str(run / "assets/model"), "source": "patchctl's smoke assets"}


def test_an_interpreter_without_the_builders_packages_is_one_line(tmp_path: Path) -> None:
    """--python without pyarrow: the error names the interpreter, what it lacks and what to do."""
    fake = tmp_path / "python-without-pyarrow"
    fake.write_text(
        f"#!{sys.executable}\n"
        + BLOCKER.replace(repr(HEAVY), "('pyarrow',)")
        + "code = sys.argv[2]\nsys.argv = ['-c', *sys.argv[3:]]\nexec(compile(code, '<boot>', 'exec'))\n"
    )
    fake.chmod(0o755)
    with pytest.raises(assets.AssetsFailed) as caught:
        assets.build("tiny-dataset", tmp_path / "data", str(fake))
    assert str(caught.value) == (
        f"building the tiny-dataset files in {tmp_path / 'data'} with {fake} failed (ModuleNotFoundError: No module "
        "named 'pyarrow' (blocked: a plain pip install has none)); that interpreter runs verl and needs pyarrow "
        "(verl's own dependencies): install them there, or pass --python with verl's interpreter"
    )
