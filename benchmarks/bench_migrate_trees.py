"""The trees ``bench_migrate.py`` sends: a patched verl release plus untracked, not-ignored files
(as a user's fork holds datasets, tokenizers or model shards that git does not ignore)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from patchctl import releases


@dataclass(frozen=True)
class Size:
    """What a row adds to the verl tree: ``small`` files of 4 kB, ``big`` files of ``big_mb`` MB."""

    name: str
    small: int = 0
    big: int = 0
    big_mb: int = 0


SIZES = {
    "verl": Size("verl"),
    "10k": Size("+ 10k small files", small=10_000),
    "100k": Size("+ 100k small files", small=100_000),
    "1g": Size("+ 1 GB of data files", big=16, big_mb=64),
    "10g": Size("+ 10 GB of data files", big=40, big_mb=256),
}


def patchctl_command() -> list[str]:
    """How the benchmarks start patchctl: the script installed beside this python, as a user runs
    it, else ``python -m patchctl``."""
    script = Path(sys.executable).with_name("patchctl")
    return [str(script)] if script.exists() else [sys.executable, "-m", "patchctl"]


def build(base: Path, version: str, size: Size, patchctl: list[str], env: dict[str, str]) -> Path:
    """verl ``version`` with the uky patchset applied, then the size's files (untracked, not
    ignored: migrate and rsync both send them)."""
    tree = base / "verl_Uky"
    shutil.copytree(releases.materialize(version), tree, symlinks=True)
    subprocess.run([*patchctl, "apply", "--target", str(tree)], check=True, capture_output=True, env=env)
    for i in range(size.small):
        folder = tree / "bench_small" / f"d{i // 500:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        line = f"{i:08d} " + hashlib.sha256(str(i).encode()).hexdigest() + "\n"
        (folder / f"f{i:06d}.txt").write_text(line * 56)  # 4 kB of text unique to the file
    if size.big:
        (tree / "bench_data").mkdir()
        block = hashlib.sha256(b"bench").digest() * (1 << 15)  # 1 MB
        for i in range(size.big):
            with open(tree / "bench_data" / f"part{i:03d}.dat", "wb") as f:
                for j in range(size.big_mb):
                    f.write(i.to_bytes(4, "big") + j.to_bytes(4, "big") + block[8:])
    listed = subprocess.run(
        ["git", "-C", str(tree), "ls-files", "-o", "--exclude-standard", "bench_small", "bench_data"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert len(listed) == size.small + size.big, "the benchmark's files must not be ignored by git"
    return tree


def tree_size(tree: Path) -> tuple[int, int]:
    """Files and bytes under ``tree`` that migrate sends (everything but .git)."""
    files = total = 0
    for p in tree.rglob("*"):
        if ".git" not in p.relative_to(tree).parts[:1] and p.is_file() and not p.is_symlink():
            files += 1
            total += p.stat().st_size
    return files, total
