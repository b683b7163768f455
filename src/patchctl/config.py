"""``patchctl.toml``: found once, read once, validated against one declared schema.

Search order: ``--config FILE``, else ``./patchctl.toml``, else
``$XDG_CONFIG_HOME/patchctl/config.toml`` (``~/.config/...``); the first file that exists is the
config. Its top level holds ``[targets]`` (name -> a path or ``verl==X.Y.Z``) and ``[clusters]``
(validated table by table in :mod:`patchctl.clusters`, whose schema lives there).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchctl import releases
from patchctl.errors import ManifestError, PatchctlError
from patchctl.schema import Field, check, check_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TOP_SCHEMA = {
    "targets": Field(dict, False, 'a table of names, e.g. mine = "~/verl_Uky" or old = "verl==0.6.1"'),
    "clusters": Field(dict, False, "[clusters.NAME] tables with hosts and root"),
}


class NoConfigFile(PatchctlError):
    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(f"{path}: no such config file; pass an existing file to --config")


def search_paths() -> list[Path]:
    """Where the config is looked for when ``--config`` is not given, in order."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return [Path("patchctl.toml"), Path(base) / "patchctl" / "config.toml"]


def expand(spec: str, config: Path | None = None) -> str:
    """A ``[targets]`` name's spec; anything else as given (a release, a path, a git ref).

    The config is read only for what could be a name, so that a release or a folder never
    depends on a config file being readable.
    """
    if releases.parse_spec(spec) or Path(spec).expanduser().exists():
        return spec
    return load(config).targets.get(spec, spec)


def find(config: Path | None) -> Path | None:
    if config is not None:
        if not config.is_file():
            raise NoConfigFile(config)
        return config
    return next((p for p in search_paths() if p.is_file()), None)


@dataclass(frozen=True)
class Config:
    #: the file it was read from; None when there is none (then everything is empty)
    file: Path | None
    #: target name -> spec: an absolute path (resolved from the file's folder) or ``verl==X.Y.Z``
    targets: dict[str, str] = field(default_factory=dict)
    #: cluster name -> its raw table, validated by :func:`patchctl.clusters.load_clusters`
    clusters: dict[str, Any] = field(default_factory=dict)


def load(config: Path | None = None) -> Config:
    """The config, validated at the top level and in ``[targets]``."""
    file = find(config)
    if file is None:
        return Config(None)
    try:
        doc = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ManifestError(file, "(document)", f"not valid TOML ({exc})", "fix the syntax") from None
    # other top-level tables belong to other tools sharing the file: only ours are checked
    check({k: v for k, v in doc.items() if k in TOP_SCHEMA}, TOP_SCHEMA, file=file)
    check_text(doc.get("targets", {}), file=file, key="targets")  # names and paths shown and used as given
    targets = {}
    for name, value in doc.get("targets", {}).items():
        if not isinstance(value, str):
            raise ManifestError(file, f"targets.{name}", "expected a string", "write a path or verl==X.Y.Z")
        targets[name] = value if releases.parse_spec(value) else str((file.parent / Path(value).expanduser()).resolve())
    return Config(file, targets, dict(doc.get("clusters", {})))
