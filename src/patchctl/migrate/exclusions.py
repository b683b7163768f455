"""Which of the tree's files stay home whatever git says: the cluster's ``exclude`` patterns and
run outputs (checkpoints, logs, ...), unless the cluster's ``include`` names them; and the files
``include`` adds, ignored by git or not. Asked by the source's walk (``treewalk``): once per folder, or
per path where the cluster has include or exclude patterns (they may name files)."""

from __future__ import annotations

import fnmatch
import functools
import os
from pathlib import Path

from patchctl.clusters import Cluster

#: directory names whose contents are run outputs: never sent unless the cluster includes them
OUTPUT_DIRS = ("checkpoints", "outputs", "logs", "wandb")


def _under(path: str, prefix: str) -> bool:
    prefix = prefix.strip("/")
    return path == prefix or path.startswith(prefix + "/") or fnmatch.fnmatchcase(path, prefix)


def excluded(path: str, cluster: Cluster) -> str | None:
    """Why ``path`` stays behind, or None. Included paths always travel."""
    if any(_under(path, inc) for inc in cluster.include):
        return None
    for pattern in cluster.exclude:
        if _under(path, pattern):
            return f"matches clusters.{cluster.name}.exclude {pattern!r}"
    return in_output_dir(path.rpartition("/")[0])


@functools.lru_cache(maxsize=4096)
def in_output_dir(folder: str) -> str | None:
    """Why a file of ``folder`` stays behind as a run output (the first output directory among
    its parts), or None: asked once per folder, not per file."""
    hit = next((d for d in folder.split("/") if d in OUTPUT_DIRS), None)
    return f"inside an output directory {hit}/" if hit else None


def included_files(root: Path, cluster: Cluster) -> set[str]:
    """Files under the cluster's ``include`` paths, ignored by git or not."""
    out: set[str] = set()
    for inc in cluster.include:
        base = root / inc.strip("/")
        if base.is_file() or base.is_symlink():
            out.add(inc.strip("/"))
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d != ".git"]
            out.update(os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/") for f in filenames)
    return out
