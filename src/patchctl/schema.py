"""A small declared-schema checker for TOML documents (manifests, cluster configs).

Each key is declared once with its type and a hint; a mismatch becomes a
:class:`ManifestError` naming the file, the key path and the fix.
"""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

from patchctl.errors import ManifestError
from patchctl.errors.base import did_you_mean
from patchctl.quoting import printable
from patchctl.records import record

_TYPE_NAMES = {str: "a string", int: "an integer", bool: "true or false", list: "a list", dict: "a table"}


@record(frozen=True)
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
    doc: dict[str, Any],
    schema: Schema,
    *,
    file: Path | str,
    prefix: str = "",
    patch: str | None = None,
    problems: list[ManifestError] | None = None,
) -> dict[str, Any]:
    """Validate ``doc`` against ``schema``; return it unchanged. Unknown keys are errors too.

    With ``problems``, every problem of the table is added to that list instead of the first one
    raised, so a config's check can report all of them at once (issue 39)."""
    found = [*_unknown(doc, schema, file, prefix, patch)]
    for key, spec in schema.items():
        if key in doc:
            found += _value(doc[key], spec, file, prefix + key, patch)
        elif spec.required:
            found.append(
                ManifestError(file, prefix + key, "missing", f"add it ({spec.hint or _TYPE_NAMES[spec.type]})", patch)
            )
    if found and problems is None:
        raise found[0]
    if problems is not None:
        problems += found
    return doc


def _unknown(
    doc: dict[str, Any], schema: Schema, file: Path | str, prefix: str, patch: str | None
) -> list[ManifestError]:
    known = ", ".join(sorted(schema))
    return [
        ManifestError(file, prefix + key, "unknown key" + did_you_mean(key, schema), f"use one of: {known}", patch)
        for key in doc
        if key not in schema
    ]


def _value(value: Any, spec: Field, file: Path | str, path: str, patch: str | None) -> list[ManifestError]:
    """The problems of one present key's value (none past a wrong type: the rest would only repeat it)."""
    if not isinstance(value, spec.type) or (spec.type is int and isinstance(value, bool)):
        return [
            ManifestError(
                file,
                path,
                f"expected {_TYPE_NAMES[spec.type]}, got {type(value).__name__}",
                f"write {spec.hint or _TYPE_NAMES[spec.type]}",
                patch,
            )
        ]
    if spec.choices and value not in spec.choices:
        return [ManifestError(file, path, f"{value!r} is not allowed", f"use one of: {', '.join(spec.choices)}", patch)]
    out = []
    if spec.item is not None and isinstance(value, list):
        out += [
            ManifestError(
                file,
                f"{path}[{i}]",
                f"expected {_TYPE_NAMES[spec.item]}, got {type(it).__name__}",
                f"write {spec.hint or 'a list of ' + _TYPE_NAMES[spec.item]}",
                patch,
            )
            for i, it in enumerate(value)
            if not isinstance(it, spec.item)
        ]
    if spec.type is str and spec.required and isinstance(value, str) and not value.strip():
        out.append(ManifestError(file, path, "is empty", f"write {spec.hint or 'a non-empty string'}", patch))
    return out


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
