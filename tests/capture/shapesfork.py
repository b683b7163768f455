"""A fork with every file type real verl forks change (issue 27.4), built on a real verl release.

The sdist has no requirements.txt or .gitignore (verl's repository does), so :func:`upstream`
adds them as one upstream commit first, tagged ``upstream``; :func:`make_fork` then makes the
fork's edits on top, uncommitted: a key added and one set in ``ppo_trainer.yaml``, a key of
``pyproject.toml``, a requirements pin, addition and removal, a README hunk, a ``.gitignore``
line, a deleted script, a renamed and edited script, and a binary ``.png``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

YAML = "verl/trainer/config/ppo_trainer.yaml"
RENAMED = ("scripts/diagnose.py", "scripts/tools/diagnose_env.py")
DELETED = "scripts/print_cfg.py"
PNG = "docs/uky_arch.png"
PNG_BYTES = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))

REQUIREMENTS = """# requirements.txt records the full set of dependencies for development
accelerate
codetiming
datasets
numpy<2.0.0
pandas
peft
pyarrow>=19.0.0
ray[default]
tensordict>=0.8.0,<=0.10.0,!=0.9.0
transformers
wandb
"""
GITIGNORE = "*.pyc\n__pycache__/\noutputs\ntmp/\n"

#: (file, old text, new text): each must match exactly once
EDITS = [
    (
        YAML,
        "  # Number of epochs in training\n  total_epochs: 30\n",
        "  # Uky: run the smoke test on one GPU\n  uky_smoke: true\n\n  # Number of epochs in training\n"
        "  total_epochs: 3  # Uky\n",
    ),
    ("pyproject.toml", "\nline-length = 120\n", "\nline-length = 100  # Uky\n"),
    ("requirements.txt", "numpy<2.0.0\npandas\n", "numpy==1.26.4  # Uky\npandas\nmath-verify==0.7.0  # Uky\n"),
    ("requirements.txt", "wandb\n", ""),
    (
        "README.md",
        "- [PPO in verl](https://verl.readthedocs.io/en/latest/algo/ppo.html)\n",
        "- [PPO in verl](https://verl.readthedocs.io/en/latest/algo/ppo.html)\n- [Our cluster](docs/uky.md)\n",
    ),
    (".gitignore", "tmp/\n", "tmp/\ncheckpoints/\n"),
]


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def upstream(tree: Path, requirements: str = REQUIREMENTS, gitignore: str = GITIGNORE) -> None:
    """The files verl's repository has beside the sdist's, committed and tagged ``upstream``."""
    (tree / "requirements.txt").write_text(requirements)
    (tree / ".gitignore").write_text(gitignore)
    git(tree, "add", "-A")
    git(tree, "commit", "-qm", "upstream: requirements.txt and .gitignore")
    git(tree, "tag", "upstream")


def make_fork(tree: Path) -> None:
    for rel, old, new in EDITS:
        path = tree / rel
        text = path.read_text(encoding="utf-8")
        assert text.count(old) == 1, f"{rel}: expected {old!r} once"
        path.write_text(text.replace(old, new), encoding="utf-8")
    (tree / DELETED).unlink()
    old, new = (tree / name for name in RENAMED)
    text = old.read_text(encoding="utf-8")
    old.unlink()
    new.parent.mkdir(parents=True, exist_ok=True)
    new.write_text(text.replace("\nimport os\n", "\nimport os\nimport sys  # Uky: the exit code\n", 1))
    (tree / PNG).parent.mkdir(parents=True, exist_ok=True)
    (tree / PNG).write_bytes(PNG_BYTES)
