"""A small declared-schema checker for TOML documents (manifests, cluster configs).

Each key is declared once with its type and a hint; a mismatch becomes a
:class:`ManifestError` naming the file, the key path and the fix.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchctl.errors import ManifestError
from patchctl.quoting import printable

_TYPE_NAMES = {str: "a string", int: "an integer", bool: "true or false", list: "a list", dict: "a table"}


@dataclass(frozen=True)
class Field:
    #: python type of the TOML value (str, int, bool, list, dict)
    type: builtins.type  # builtins': the field's own name shadows it in the class body
    #: whether the key must be present
    required: bool = False
    #: what to write, shown in the error's fix
    hint: str = ""
    #: allowed values, when the set is closed
    choices: tuple[str, ...] = ()
    #: for lists: the type of each item
    item: builtins.type | None = None


Schema = dict[str, Field]


def check(
    doc: dict[str, Any], schema: Schema, *, file: Path | str, prefix: str = "", patch: str | None = None
) -> dict[str, Any]:
    """Validate ``doc`` against ``schema``; return it unchanged. Unknown keys are errors too."""
    for key in doc:
        if key not in schema:
            known = ", ".join(sorted(schema))
            raise ManifestError(file, prefix + key, "unknown key", f"use one of: {known}", patch)
    for key, spec in schema.items():
        path = prefix + key
        if key not in doc:
            if spec.required:
                raise ManifestError(file, path, "missing", f"add it ({spec.hint or _TYPE_NAMES[spec.type]})", patch)
            continue
        value = doc[key]
        if not isinstance(value, spec.type) or (spec.type is int and isinstance(value, bool)):
            raise ManifestError(
                file,
                path,
                f"expected {_TYPE_NAMES[spec.type]}, got {type(value).__name__}",
                f"write {spec.hint or _TYPE_NAMES[spec.type]}",
                patch,
            )
        if spec.choices and value not in spec.choices:
            raise ManifestError(
                file, path, f"{value!r} is not allowed", f"use one of: {', '.join(spec.choices)}", patch
            )
        if spec.item is not None and isinstance(value, list):
            for i, it in enumerate(value):
                if not isinstance(it, spec.item):
                    raise ManifestError(
                        file,
                        f"{path}[{i}]",
                        f"expected {_TYPE_NAMES[spec.item]}, got {type(it).__name__}",
                        f"write {spec.hint or 'a list of ' + _TYPE_NAMES[spec.item]}",
                        patch,
                    )
        if spec.type is str and spec.required and isinstance(value, str) and not value.strip():
            raise ManifestError(file, path, "is empty", f"write {spec.hint or 'a non-empty string'}", patch)
    return doc


def check_text(value: Any, *, file: Path | str, key: str) -> None:
    """No control character (newline, CR, tab, ESC, ...) in any string or table key of ``value``.

    For the cluster config (issue 41 req 5): its host names, roots and paths reach log lines,
    shell files and other tools' command lines. A host named ``"n1\\nmigrate x: 1/1 hosts ok"``
    forged a result line, and a root with a newline wrote a second line into the host's
    ``env.sh``. ``key`` is the path of ``value`` (``clusters.c``), named in the error.
    """
    if isinstance(value, str):
        bad = next((c for c in value if printable(c) != c), None)
        if bad is not None:
            raise ManifestError(
                file,
                key,
                f"contains the control character {printable(bad)}",
                "write it on one line, without control characters",
            )
    elif isinstance(value, dict):
        for k, v in value.items():
            check_text(k, file=file, key=f"{key}.{k}")
            check_text(v, file=file, key=f"{key}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_text(v, file=file, key=f"{key}[{i}]")
