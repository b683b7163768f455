"""Turning ``--target`` into a verl tree on disk: a path, a release spec, or a configured name."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from patchctl import git, releases
from patchctl.errors import ManifestError, NotAVerlTree, UnknownTarget

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


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


def config_paths() -> list[Path]:
    """Where target names and clusters are configured: ./patchctl.toml, then the user's config."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return [Path("patchctl.toml"), Path(base) / "patchctl" / "config.toml"]


def _configured(name: str, config: Path | None) -> str | None:
    for path in [config] if config else config_paths():
        if path is None or not path.is_file():
            continue
        try:
            doc = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ManifestError(path, "(document)", f"not valid TOML ({exc})", "fix the syntax") from None
        targets = doc.get("targets", {})
        if name in targets:
            value = targets[name]
            if not isinstance(value, str):
                raise ManifestError(path, f"targets.{name}", "expected a string", "write a path or verl==X.Y.Z")
            return str((path.parent / value).resolve()) if not releases.parse_spec(value) else value
    return None


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
    """Resolve ``--target``: an existing directory, ``verl==X.Y.Z``, or a name from the config."""
    version = releases.parse_spec(spec)
    if version:
        return open_tree(releases.materialize(version), spec)
    path = Path(spec).expanduser()
    if path.is_dir():
        return open_tree(path, spec)
    configured = _configured(spec, config)
    if configured:
        return resolve(configured)
    if path.exists() or "/" in spec or spec.startswith("."):
        raise NotAVerlTree(path)
    raise UnknownTarget(spec)
