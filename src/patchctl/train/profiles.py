"""Training profiles are data: ``profiles.toml`` beside this module, validated on load.

A profile names the environment and hydra overrides of one verl run, which values it needs
from the cluster config, and the thresholds of its gates. Resolving a profile fills its
``{PLACEHOLDERS}`` and returns plain strings, so the launcher never sees the TOML. Its fields
and their schema are in ``profilemodel.py``; this module loads, adapts and resolves.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from patchctl.errors import ManifestError, PlaceholderMissing, SettingsMissing, UnknownProfile
from patchctl.schema import Field, check
from patchctl.train.profilemodel import ADAPT_SCHEMA, FLOAT_GATES, GATES_SCHEMA, PREPARE, PROFILE_SCHEMA
from patchctl.train.profilemodel import Adapt as Adapt
from patchctl.train.profilemodel import Gates as Gates
from patchctl.train.profilemodel import Profile as Profile

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_PLACEHOLDER = re.compile(r"\{([A-Z][A-Z0-9_]*)\}")
_ENVREF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def profiles_file() -> Path:
    return Path(str(resources.files("patchctl.train") / "profiles.toml"))


def _profile(name: str, raw: Any, file: Path) -> Profile:
    prefix = f"profile.{name}."
    if not isinstance(raw, dict):
        raise ManifestError(file, prefix[:-1], "expected a table", f"write [profile.{name}]")
    check(raw, PROFILE_SCHEMA, file=file, prefix=prefix)
    for key in ("env", "defaults"):
        for k, v in raw.get(key, {}).items():
            if not isinstance(v, str):
                raise ManifestError(
                    file, f"{prefix}{key}.{k}", f"expected a string, got {type(v).__name__}", "quote it"
                )
    for i, item in enumerate(raw.get("prepare", [])):
        if item not in PREPARE:
            raise ManifestError(
                file, f"{prefix}prepare[{i}]", f"{item!r} is not a known step", f"use: {', '.join(PREPARE)}"
            )
    for i, ov in enumerate(raw["overrides"]):
        if "=" not in ov:
            raise ManifestError(file, f"{prefix}overrides[{i}]", f"{ov!r} is not KEY=VALUE", "write key=value")
    gates = dict(raw.get("gates", {}))
    for key in FLOAT_GATES:
        if key not in gates:
            continue
        if isinstance(gates[key], bool) or not isinstance(gates[key], (int, float)):
            raise ManifestError(
                file,
                f"{prefix}gates.{key}",
                f"expected a number, got {type(gates[key]).__name__}",
                "write a number such as 0.3",
            )
        gates[key] = float(gates[key])
    check(gates, GATES_SCHEMA, file=file, prefix=prefix + "gates.")
    adapts = []
    for i, a in enumerate(raw.get("adapt", [])):
        where = f"{prefix}adapt[{i}]."
        if not isinstance(a, dict):
            raise ManifestError(file, where[:-1], "expected a table", f"write [[profile.{name}.adapt]]")
        check(a, ADAPT_SCHEMA, file=file, prefix=where)
        try:
            SpecifierSet(a["verl"])
        except InvalidSpecifier:
            raise ManifestError(
                file, where + "verl", f"{a['verl']!r} is not a version range", 'write e.g. ">=0.9"'
            ) from None
        for k, v in a.get("env", {}).items():
            if not isinstance(v, str):
                raise ManifestError(file, f"{where}env.{k}", f"expected a string, got {type(v).__name__}", "quote it")
        for j, ov in enumerate(a.get("overrides", [])):
            if "=" not in ov:
                raise ManifestError(file, f"{where}overrides[{j}]", f"{ov!r} is not KEY=VALUE", "write key=value")
        adapts.append(
            Adapt(
                a["verl"],
                a["why"],
                tuple(a.get("unset_env", ())),
                dict(a.get("env", {})),
                tuple(a.get("overrides", ())),
            )
        )
    return Profile(
        name,
        raw["description"],
        raw["rollout"],
        raw["assets"],
        tuple(raw["overrides"]),
        tuple(raw.get("needs", ())),
        tuple(raw.get("prepare", ())),
        tuple(raw.get("requires", ())),
        dict(raw.get("env", {})),
        dict(raw.get("defaults", {})),
        Gates(**gates),
        raw.get("ray_head_cpus"),
        tuple(adapts),
    )


def load_profiles(file: Path | None = None) -> dict[str, Profile]:
    file = file or profiles_file()
    try:
        doc = tomllib.loads(file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(file, "(document)", f"not valid TOML ({exc})", "fix the syntax") from None
    check(doc, {"profile": Field(dict, True, "[profile.NAME] tables")}, file=file)
    return {name: _profile(name, raw, file) for name, raw in doc["profile"].items()}


def load_profile(name: str, file: Path | None = None) -> Profile:
    profiles = load_profiles(file)
    if name not in profiles:
        raise UnknownProfile(name, list(profiles))
    return profiles[name]


def adapt(profile: Profile, verl_version: str | None) -> tuple[Profile, tuple[Adapt, ...]]:
    """The profile as it runs on ``verl_version``: its matching adapt tables applied, in order.

    An unknown version (a checkout without ``verl/version/version``) gets the profile as written.
    The adapt tables' overrides come after the profile's own, and the user's still come last.
    """
    if not verl_version or not profile.adapt:
        return profile, ()
    try:
        version = Version(verl_version)
    except InvalidVersion:
        return profile, ()
    applied = tuple(a for a in profile.adapt if SpecifierSet(a.verl).contains(version, prereleases=True))
    if not applied:
        return profile, ()
    env, overrides = dict(profile.env), list(profile.overrides)
    for a in applied:
        for k in a.unset_env:
            env.pop(k, None)
        env.update(a.env)
        overrides.extend(a.overrides)
    return replace(profile, env=env, overrides=tuple(overrides)), applied


def fill(text: str, values: dict[str, str], where: str) -> str:
    """Replace ``{NAME}`` from ``values``; a missing one is an error naming where it was used."""

    def sub(m: re.Match[str]) -> str:
        if m.group(1) not in values:
            raise PlaceholderMissing(where, m.group(1))
        return values[m.group(1)]

    return _PLACEHOLDER.sub(sub, text)


def expand_env(value: str, environ: dict[str, str] | os._Environ[str]) -> str:
    """``$NAME``/``${NAME}`` from the calling environment; an unset one leaves no stray ``:``."""
    out = _ENVREF.sub(lambda m: environ.get(m.group(1) or m.group(2), ""), value)
    return out.strip(":") if out != value else out


def resolve_values(profile: Profile, given: dict[str, str]) -> dict[str, str]:
    """Placeholder values: what patchctl/the cluster gives, then the profile's defaults."""
    values = dict(given)
    for _ in range(3):  # defaults may refer to each other ({RUN_DIR}/checkpoints)
        for key, default in profile.defaults.items():
            if key not in given:
                values[key] = _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), default)
    missing = [k for k in profile.needs if k not in values]
    if missing:
        raise SettingsMissing(profile.name, missing)
    return values
