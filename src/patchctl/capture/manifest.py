"""Writing ``patchset.toml`` by hand-rolled TOML: readable multi-line texts, exact bytes.

patchctl reads TOML with the standard library but has no TOML writer dependency; the manifest
uses a handful of value types, and texts that must survive byte for byte (``before``/``after``)
are written as literal multi-line strings where that is lossless, else as escaped strings.
"""

from __future__ import annotations

import json
from typing import Any

_BARE = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def key(name: str) -> str:
    return name if name and set(name) <= _BARE else json.dumps(name)


def string(value: str) -> str:
    """A TOML string that reads back as exactly ``value``."""
    printable = all(c in "\n\t" or (c >= " " and c != "\x7f") for c in value)
    if "\n" in value and printable and "'''" not in value and not value.endswith("'"):
        # a newline right after the opening quotes is dropped by TOML, so one is always written
        return "'''\n" + value + "'''"
    # JSON's escapes are valid in TOML basic strings; TOML also wants DEL escaped
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def render(patchset: dict[str, Any], patches: list[dict[str, Any]]) -> str:
    """The manifest text: ``[patchset]`` then one ``[[patch]]`` (with ``[patch.params]``) each."""
    out = ["[patchset]"]
    out += [f"{key(k)} = {value(v)}" for k, v in patchset.items()]
    for p in patches:
        out += ["", "[[patch]]"]
        out += [f"{key(k)} = {value(v)}" for k, v in p.items() if k not in ("params", "upstream")]
        if "upstream" in p:
            out.append(f"upstream = {value(p['upstream'])}")
        out.append("[patch.params]")
        out += [f"{key(k)} = {value(v)}" for k, v in p["params"].items()]
    return "\n".join(out) + "\n"
