"""requirement: add, remove or pin one package of a requirements file, whatever line it is on.

A requirements file is a list keyed by package name: upstream reorders it, adds neighbours and
re-pins others all the time, and none of that should touch the fork's one line. The package is
found by its normalized name (PEP 503: ``Flash_Attn`` is ``flash-attn``); a new one goes before
the package the fork put it before, else at the end. ``setup.py``'s ``install_requires`` is
Python and is carried by the Python kinds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from patchctl.errors import ManifestError
from patchctl.patchsets.kinds.swap import Spot, Swap
from patchctl.schema import Field, Schema

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def package_of(line: str) -> str | None:
    """The normalized package a requirement line names; None for comments, blanks and options (-r, --index-url)."""
    if line.lstrip().startswith(("#", "-")):
        return None
    m = _NAME.match(line)
    return re.sub(r"[-_.]+", "-", m.group(1)).lower() if m else None


@dataclass(frozen=True)
class Params:
    #: the normalized package name
    package: str
    #: upstream's line for it; None when the fork adds the package
    was: str | None
    #: the fork's line; None when the fork removes the package
    now: str | None
    #: the package a new line goes before, when upstream still lists it
    before: str | None


class Requirement(Swap):
    name: ClassVar[str] = "requirement"
    description: ClassVar[str] = "Add, remove or pin one package of a requirements file, found by its name."
    params_schema: ClassVar[Schema] = {
        "package": Field(str, True, 'the package name, e.g. "vllm"'),
        "was": Field(str, False, "upstream's line for the package (leave out when the patch adds it)"),
        "now": Field(str, False, 'the line the patch writes, e.g. "vllm==0.8.5  # Uky" (leave out to remove it)'),
        "before": Field(str, False, "the package a new line goes before"),
    }

    def parse_params(self, raw: dict[str, Any], patchset_root: Path, manifest: Path, patch_id: str) -> Params:
        package = package_of(raw["package"])
        if package is None or package != raw["package"].strip().lower().replace("_", "-").replace(".", "-"):
            raise ManifestError(
                manifest,
                "params.package",
                f"{raw['package']!r} is not a package name",
                'write the name only, e.g. "flash-attn"',
                patch_id,
            )
        for key in ("was", "now"):
            line = raw.get(key)
            if line is not None and (package_of(line) != package or "\n" in line.rstrip("\n")):
                raise ManifestError(
                    manifest,
                    f"params.{key}",
                    f"{line!r} is not one requirement line for {package}",
                    f'write one line naming {package}, e.g. "{package}>=1.0"',
                    patch_id,
                )
        self._one_change(raw, manifest, patch_id, "write the requirement line the patch sets", "is params.was again")
        before = package_of(raw["before"]) if "before" in raw else None
        return Params(package, raw.get("was"), raw.get("now"), before)

    def _what(self, p: Params) -> str:
        return f"package {p.package}"

    def _spot(self, lines: list[str], p: Params, path: str) -> Spot:
        named = [(i, package_of(ln)) for i, ln in enumerate(lines)]
        mine = [i for i, name in named if name == p.package]
        if len(mine) > 1:
            return Spot(
                mine[0],
                mine[0] + 1,
                None,
                f"{path}: {p.package} is listed on {len(mine)} lines "
                f"({', '.join(str(i + 1) for i in mine)}); keep one and apply again",
            )
        if mine:
            return Spot(mine[0], mine[0] + 1, lines[mine[0]])
        at = next((i for i, name in named if p.before and name == p.before), None)
        if at is None:
            at = len(lines)
            while at > 0 and not lines[at - 1].strip():
                at -= 1
        return Spot(at, at, None)

    def _next(self, lines: list[str], spot: Spot, p: Params, path: str) -> str | None:
        return next((name for name in map(package_of, lines[spot.end :]) if name), None)
