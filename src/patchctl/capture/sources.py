"""FORK and BASE as directories of files, whatever the user named them by.

BASE may be a directory, ``verl==X.Y.Z`` (the release's sdist, unpacked fresh, because the
cached working tree may carry a user's patches), or a git ref of FORK's repository (exported
with ``git archive``, so FORK's working tree and index are never touched).
"""

from __future__ import annotations

import os
import tarfile
from dataclasses import dataclass
from pathlib import Path

from patchctl import git, proc, releases
from patchctl.errors import CommandFailed, PatchctlError
from patchctl.target import read_version
from patchctl.verify.tags import SKIP_DIRS


@dataclass(frozen=True)
class Tree:
    root: Path
    #: how the user named it, for messages and the manifest
    label: str
    version: str | None
    #: relative POSIX paths of the files that belong to the tree
    files: frozenset[str]


def list_files(root: Path) -> frozenset[str]:
    """The files of a tree as git sees it (tracked plus untracked not ignored), else by walking.

    Git's answer matters for a fork: build outputs and checkpoints it ignores are not edits.
    """
    if git.is_worktree_root(root):
        names = git.worktree_files(root)
        return frozenset(n for n in names if not set(Path(n).parts[:-1]) & SKIP_DIRS and (root / n).is_file())
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        rel = os.path.relpath(dirpath, root)
        out += [name if rel == "." else f"{rel}/{name}".replace(os.sep, "/") for name in filenames]
    return frozenset(out)


def open_fork(path: Path) -> Tree:
    if not path.is_dir():
        raise PatchctlError(f"--from {path}: not a directory; pass the fork's checkout")
    return Tree(path.resolve(), str(path), read_version(path), list_files(path))


def open_base(spec: str, fork: Path, scratch: Path) -> Tree:
    """Resolve ``--base`` into a directory; a release or git ref is exported under ``scratch``."""
    version = releases.parse_spec(spec)
    if version:
        root = releases.pristine(version, scratch / "base")
        return Tree(root, spec, version, list_files(root))
    path = Path(spec).expanduser()
    if path.is_dir():
        return Tree(path.resolve(), spec, read_version(path), list_files(path))
    if git.toplevel(fork) is None:
        raise PatchctlError(f"--base {spec}: not a directory, not verl==X.Y.Z, and {fork} is not a git "
                            "repository to look the ref up in")
    try:
        commit = proc.run(["git", "-C", str(fork), "rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}"]).stdout.strip()
    except CommandFailed:
        raise PatchctlError(f"--base {spec}: no such commit, branch or tag in {fork}; "
                            "check `git -C FORK tag` or pass a directory or verl==X.Y.Z") from None
    archive = scratch / "base.tar"
    proc.run(["git", "-C", str(fork), "archive", "--format=tar", "-o", str(archive), commit])
    root = scratch / "base"
    root.mkdir()
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(root, filter="data")
        else:  # pragma: no cover - Python < 3.10.12
            tar.extractall(root)
    return Tree(root, f"{spec} ({commit[:12]})", read_version(root), list_files(root))
