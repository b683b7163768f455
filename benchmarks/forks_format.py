"""A verl tree run through a formatter, for ``bench_forks.py``'s ``fmt`` column (issue 38.3).

Upstream reformats its code from time to time (verl moved from yapf to ruff); a formatter turns
a backslash continuation into brackets, wraps or joins long lines, collapses a short docstring
onto one line, adds trailing commas. None of that changes the syntax tree, so none of it may
change what patchctl does: the column counts the patches whose outcome on the formatted tree
differs from the outcome on the tree as released.

Both formatters run with their own defaults (line length 88), not the tree's configuration:
upstream's own settings may already match the code and so test nothing, while the defaults
re-wrap most long statements. Files a formatter cannot parse are left as they are.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

TOOLS = ("ruff", "black")


def formatted(tree: Path, tool: str, dest: Path, files: list[str]) -> Path:
    """A copy of ``tree`` at ``dest`` with ``files`` (those the patchset changes) formatted by
    ``tool`` where they are Python (cached: ``dest`` is kept)."""
    if dest.is_dir():
        return dest
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(tree, tmp, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    bin_dir = Path(sys.executable).parent
    py = sorted({f for f in files if f.endswith(".py") and (tmp / f).is_file()})
    if tool == "ruff":
        argv = [str(bin_dir / "ruff"), "format", "--isolated", "--quiet"]
    else:
        empty = tmp.parent / "black-defaults.toml"
        empty.write_text("", encoding="utf-8")
        argv = [str(bin_dir / "black"), "--quiet", "--config", str(empty)]
    if py:
        subprocess.run([*argv, *py], cwd=tmp, capture_output=True, check=False)  # unparsable files stay as they are
    tmp.rename(dest)
    return dest
