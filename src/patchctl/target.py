"""Turning ``--target`` into a verl tree on disk: a path, a release spec, or a configured name."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patchctl import git, trees
from patchctl.config import load as load_config
from patchctl.errors import NotAVerlTree, UnknownTarget


@dataclass(frozen=True)
class Target:
    #: the tree's root directory
    root: Path
    #: verl's version as the tree declares it (verl/version/version), if readable
    version: str | None
    #: what the user typed, for messages
    label: str
    #: HEAD of the tree's git repository, None when it is not one
    commit: str | None
    #: True when the tree's root is a git work tree root
    is_git: bool


def read_version(root: Path) -> str | None:
    f = root / "verl" / "version" / "version"
    try:
        return f.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def open_tree(root: Path, label: str | None = None) -> Target:
    root = root.resolve()
    if not (root / "verl" / "__init__.py").is_file():
        raise NotAVerlTree(root)
    is_git = git.is_worktree_root(root)
    return Target(root, read_version(root), label or str(root), git.head(root) if is_git else None, is_git)


def resolve(spec: str, config: Path | None = None) -> Target:
    """Resolve ``--target``: ``verl==X.Y.Z`` (the cached tree, patched in place), an existing
    directory, or a name from the config's ``[targets]``."""
    found = trees.parse(spec)
    if found is not None:
        return open_tree(trees.materialize(found), spec)
    configured = load_config(config).targets.get(spec)
    if configured:
        return resolve(configured)
    path = Path(spec).expanduser()
    if path.exists() or "/" in spec or spec.startswith("."):
        raise NotAVerlTree(path)
    raise UnknownTarget(spec)
