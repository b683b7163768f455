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
from patchctl.errors.usage import ConfigProblems
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


def load(config: Path | None = None, problems: list[ManifestError] | None = None) -> Config:
    """The config, validated at the top level and in ``[targets]``.

    Every problem found is reported at once (:class:`ConfigProblems`; one alone as itself); with
    ``problems`` they are added to that list instead, for a caller that goes on to check the
    clusters and reports everything together."""
    file = find(config)
    if file is None:
        return Config(None)
    try:
        doc = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ManifestError(file, "(document)", f"not valid TOML ({exc})", "fix the syntax") from None
    found: list[ManifestError] = []
    # a mistyped table ([targest], [cluster.gpu]) was ignored in silence: the file is patchctl's own
    check(doc, TOP_SCHEMA, file=file, problems=found)
    targets = {}
    raw = doc.get("targets", {}) if isinstance(doc.get("targets", {}), dict) else {}
    for name, value in raw.items():
        try:
            check_text(name, file=file, key="targets")  # names and paths shown and used as given
            check_text(value, file=file, key=f"targets.{name}")
        except ManifestError as exc:
            found.append(exc)
            continue
        if not isinstance(value, str):
            found.append(ManifestError(file, f"targets.{name}", "expected a string", "write a path or verl==X.Y.Z"))
            continue
        targets[name] = value if releases.parse_spec(value) else str((file.parent / Path(value).expanduser()).resolve())
    if problems is not None:
        problems += found
    else:
        raise_all(file, found)
    clusters = doc.get("clusters", {})
    return Config(file, targets, dict(clusters) if isinstance(clusters, dict) else {})


def raise_all(file: Path, problems: list[ManifestError]) -> None:
    """Raise the problems found in ``file``: one as itself, several together."""
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise ConfigProblems(file, problems)
