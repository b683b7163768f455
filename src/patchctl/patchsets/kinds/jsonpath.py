"""Where each member of a pretty-printed JSON document sits, by key path, and its commas.

The same line-level view as :mod:`~patchctl.patchsets.kinds.keypath` gives YAML and TOML: a
member that starts its own line and ends at the end of one (``"key": value,``) is a key whose
lines config-key may set, add or remove. Members written inline (``{"a": 1, "b": 2}``) belong to
the value of the key around them. JSON wants a comma after every member but the last, so after
an edit :func:`fix_commas` puts that right on the lines next to it (in valid JSON nothing else
needs it, so nothing else changes).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_SCALAR = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?|true|false|null")
_WS = re.compile(r"\s*")


@dataclass(frozen=True)
class Member:
    path: tuple[str, ...]
    #: first and one-past-last line of the member
    start: int
    end: int
    indent: int
    #: whether the member is on lines of its own (else it is part of a value written inline)
    own_lines: bool
    #: where the object holding it starts in the text: members of one object share it
    parent: int


def members(lines: list[str]) -> list[Member]:
    """Every object member of the document; [] when it is no JSON (the caller says so)."""
    text = "".join(lines)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))
    out: list[Member] = []
    try:
        end = _value(text, _WS.match(text, 0).end(), (), out, starts)  # type: ignore[union-attr] # _WS matches ''
    except (ValueError, IndexError):
        return []
    return out if not text[end:].strip() else []


def _line_of(starts: list[int], at: int) -> int:
    lo, hi = 0, len(starts) - 1
    while lo < hi - 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if starts[mid] <= at else (lo, mid)
    return lo


def _value(text: str, i: int, path: tuple[str, ...], out: list[Member], starts: list[int]) -> int:
    """Scan the value at ``i`` (recording the members of objects in it); return where it ends."""
    ch = text[i]
    if ch == '"':
        return json.decoder.scanstring(text, i + 1)[1]  # type: ignore[attr-defined,no-any-return] # untyped, str
    if ch in "{[":
        return _container(text, i, path, out, starts)
    m = _SCALAR.match(text, i)
    if not m:
        raise ValueError(f"not JSON at {i}")
    return m.end()


def _container(text: str, i: int, path: tuple[str, ...], out: list[Member], starts: list[int]) -> int:
    close, opened = ("}" if text[i] == "{" else "]"), i
    i = _skip(text, i + 1)
    while text[i] != close:
        if close == "}":
            key_at = i
            key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined] # json's, not in typeshed
            i = _skip(text, i)
            if text[i] != ":":
                raise ValueError("expected :")
            end = _value(text, _skip(text, i + 1), (*path, key), out, starts)
            _record(text, key_at, end, (*path, key), opened, out, starts)
            i = end
        else:
            i = _value(text, i, path, out, starts)  # a list's items have no key path of their own
        i = _skip(text, i)
        if text[i] == ",":
            i = _skip(text, i + 1)
        elif text[i] != close and not (close == "}" and text[i] == '"'):  # a missing comma is what fix_commas mends
            raise ValueError("expected , or the end")
    return i + 1


def _record(
    text: str, key_at: int, end: int, path: tuple[str, ...], parent: int, out: list[Member], starts: list[int]
) -> None:
    first, last = _line_of(starts, key_at), _line_of(starts, max(key_at, end - 1))
    line_start = starts[first]
    rest = text[end : starts[last + 1]] if last + 1 < len(starts) else text[end:]
    own = not text[line_start:key_at].strip() and rest.strip() in ("", ",")
    out.append(Member(path, first, last + 1, key_at - line_start, own, parent))


def _skip(text: str, i: int) -> int:
    return _WS.match(text, i).end()  # type: ignore[union-attr] # _WS matches the empty string


def fix_commas(text: str) -> str:
    """A comma after every member on lines of its own but the last of its object, and none after that."""
    lines = text.splitlines(keepends=True)
    found = members(lines)
    for parent in {m.parent for m in found}:
        everyone = [m for m in found if m.parent == parent]
        mine = sorted((m for m in everyone if m.own_lines), key=lambda m: m.start)
        if len(mine) != len(everyone):
            continue  # an object written partly inline: leave its commas as they are
        for k, m in enumerate(mine):
            lines[m.end - 1] = _comma(lines[m.end - 1], k < len(mine) - 1)
    return "".join(lines)


def _comma(line: str, wanted: bool) -> str:
    body = line.rstrip("\r\n")
    ending = line[len(body) :]
    bare = body.rstrip()
    has = bare.endswith(",")
    if has == wanted:
        return line
    return (bare + "," if wanted else bare[:-1].rstrip()) + ending


def addressable(found: list[Member]) -> list[Member]:
    """The members a key path names: on lines of their own, and the only member with that path (the
    objects of a list share their keys' paths, and a key path cannot tell them apart)."""
    seen: dict[tuple[str, ...], int] = {}
    for m in found:
        seen[m.path] = seen.get(m.path, 0) + 1
    return [m for m in found if m.own_lines and seen[m.path] == 1]
