"""Recorded conflict resolutions, replayed where the same conflict comes back (``git rerere``).

``patchctl refresh`` writes ``resolutions.toml`` beside a patchset's manifest: per resolved
conflict the patch id, the sha256 of upstream's text at the conflict's place (the key, with the
id), that text and what the user made of it. The ``structural`` kind tries a patch's
resolutions where its own text does not fit, and :mod:`~patchctl.patchsets.kinds.replay` does so
for every other kind, so the next version with the same upstream text applies without asking again.

The file is as untrusted as the manifest: it must be a regular file (not a symlink to elsewhere),
every entry must name a patch of the manifest and carry the hash of its own text (an
edited text with a stale key is refused, not replayed where it was never resolved), and it names
no path: a resolution is only ever written where its patch's anchors lead, inside the tree.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from patchctl import records
from patchctl.errors import ManifestError
from patchctl.patchsets.model import Patch, Resolution
from patchctl.schema import Field, check
from patchctl.sha import sha256

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FILE = "resolutions.toml"
SCHEMA = {
    "patch": Field(str, True, "the id of a patch of the manifest"),
    "context": Field(str, True, "the sha256 of before"),
    "indent": Field(str, False, "the indentation the texts were recorded at"),
    # both may be empty (an empty place; a deleted file), so not "required", which refuses ""
    "before": Field(str, False, "upstream's text at the conflict's place"),
    "after": Field(str, False, "what the conflict was resolved to"),
    "recorded_on": Field(str, False, "the tree it was recorded on"),
    "above": Field(list, False, "the place's own anchors above, where the patch's led nowhere", item=str),
    "below": Field(list, False, "the place's own anchors below", item=str),
    "blocks": Field(list, False, "the place's own block headers", item=str),
    "whole": Field(bool, False, "before and after are the whole file (empty after: the file is deleted)"),
    "keep": Field(bool, False, "upstream's text was kept: the patch is dropped from `since` on (no after)"),
    "since": Field(str, False, "the verl version the keep was recorded on"),
}


def context_of(text: str) -> str:
    return sha256(text.encode("utf-8")).hexdigest()


def _read(directory: Path) -> list[dict[str, Any]]:
    file = directory / FILE
    if file.is_symlink():
        raise ManifestError(
            file, "(file)", f"is a symbolic link (to {os.readlink(file)})", "replace it with the file itself"
        )
    if not file.is_file():
        return []
    try:
        doc = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ManifestError(
            file, "(document)", f"not valid TOML ({exc})", "fix the syntax or delete the file"
        ) from None
    check(doc, {"resolution": Field(list, True, "[[resolution]] tables", item=dict)}, file=file)
    return list(doc["resolution"])


def attach(directory: Path, patches: list[Patch]) -> list[Patch]:
    """``patches`` with the resolutions recorded for each; every entry validated."""
    file = directory / FILE
    by_id = {p.id: p for p in patches}
    found: dict[str, list[Resolution]] = {}
    kept: dict[str, list[Resolution]] = {}
    for i, raw in enumerate(_read(directory)):
        check(raw, SCHEMA, file=file, prefix=f"resolution[{i}].")
        keep = bool(raw.get("keep", False))
        for key in ("before",) if keep else ("before", "after"):
            if key not in raw:
                raise ManifestError(file, f"resolution[{i}].{key}", "missing", f"add it ({SCHEMA[key].hint})")
        pid = raw["patch"]
        if by_id.get(pid) is None:
            raise ManifestError(
                file,
                f"resolution[{i}].patch",
                f"{pid!r} is no patch of the manifest",
                "delete this resolution",
                pid,
            )
        if keep and raw.get("after", raw["before"]) != raw["before"]:
            raise ManifestError(
                file,
                f"resolution[{i}].after",
                "differs from before in an entry that keeps upstream's text",
                "delete `keep = true` (an edited resolution) or `after` (upstream's text kept)",
                pid,
            )
        if keep and raw.get("since"):
            from packaging.version import InvalidVersion, Version  # here: only a kept entry's since (see loader._spec)

            try:
                Version(raw["since"])
            except InvalidVersion:
                raise ManifestError(
                    file, f"resolution[{i}].since", f"{raw['since']!r} is no version", 'write one such as "0.7.0"', pid
                ) from None
        if context_of(raw["before"]) != raw["context"] or (
            not keep
            and (
                raw["before"] == raw["after"]
                or (not raw["after"] and not (raw.get("whole") and by_id[pid].kind == "delete-file"))
            )
        ):
            raise ManifestError(
                file,
                f"resolution[{i}].context",
                "does not match the sha256 of before, before equals after, or after is empty (only a "
                "delete-file's may be): the entry was edited",
                "delete it and resolve the conflict again",
                pid,
            )
        (kept if keep else found).setdefault(pid, []).append(
            Resolution(
                raw["context"],
                raw.get("indent", ""),
                raw["before"],
                raw.get("after", raw["before"]),
                raw.get("recorded_on", ""),
                tuple(raw.get("above", ())),
                tuple(raw.get("below", ())),
                tuple(raw.get("blocks", ())),
                bool(raw.get("whole", False)),
                keep,
                raw.get("since", "") if keep else "",
            )
        )
    return [
        records.replace(p, resolutions=tuple(found.get(p.id, ())), kept=tuple(kept.get(p.id, ())))
        if p.id in found or p.id in kept
        else p
        for p in patches
    ]


def _string(value: str) -> str:
    """A TOML string that reads back as exactly ``value``: a multi-line literal where that is
    lossless (resolutions are read by people), else a basic string with JSON's escapes."""
    printable = all(c in "\n\t" or (c >= " " and c != "\x7f") for c in value)
    if "\n" in value and printable and "'''" not in value and not value.endswith("'"):
        return "'''\n" + value + "'''"  # TOML drops the newline right after the opening quotes
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_string(str(x)) for x in v) + "]"
    return _string(str(v))


def record(directory: Path, patch: str, resolution: Resolution) -> None:
    """Add ``resolution`` of ``patch`` (replacing one with the same key), written atomically."""
    entries = [e for e in _read(directory) if (e.get("patch"), e.get("context")) != (patch, resolution.context)]
    entry = {"patch": patch, **records.asdict(resolution)}
    if resolution.keep:  # after is before: one copy of upstream's text is enough to read
        del entry["after"]
    else:
        del entry["since"]
    entries.append(entry)
    _write(directory, entries)


def forget(directory: Path, patches: set[str]) -> None:
    """Drop the entries of ``patches`` (retired from the manifest: an entry naming no patch is
    refused on load); the file goes when none is left."""
    entries = _read(directory)
    left = [e for e in entries if e.get("patch") not in patches]
    if len(left) == len(entries):
        return
    if left:
        _write(directory, left)
    else:
        (directory / FILE).unlink()


def _write(directory: Path, entries: list[dict[str, Any]]) -> None:
    out = ["# conflict resolutions recorded by `patchctl refresh`; replayed where the same conflict comes back"]
    for e in entries:
        out += ["", "[[resolution]]"] + [f"{k} = {_value(v)}" for k, v in e.items() if v not in ((), [], False)]
    tmp = directory / f".{FILE}.tmp"
    tmp.write_text("\n".join(out) + "\n", encoding="utf-8")
    os.replace(tmp, directory / FILE)
