"""Configs by key path and requirement lists by package: the drafts :mod:`patchctl.capture.othertypes`
prefers for a structured file, kept only when spliced together over BASE they give exactly the
fork's file (a comment no key holds sends the whole file to text hunks instead).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from patchctl.capture.model import splice
from patchctl.patchsets.kinds import keypath
from patchctl.patchsets.kinds.config_key import ConfigKey
from patchctl.patchsets.kinds.config_key import Params as KeyParams
from patchctl.patchsets.kinds.requirement import Params as ReqParams
from patchctl.patchsets.kinds.requirement import Requirement, package_of
from patchctl.patchsets.kinds.swap import Swap
from patchctl.patchsets.kinds.text_hunk import TextHunk

#: a drafted edit before it gets an id: kind, params, the kind's parsed params, first fork line, what it
#: is, and the 1-based fork lines it writes (where a tag makes it the user's edit)
Found = tuple[str, dict[str, Any], Any, int, str, range]

#: the kinds a drafted edit may be, by name: what turns its parsed params into the BASE lines it replaces
KINDS: dict[str, Swap] = {"config-key": ConfigKey(), "requirement": Requirement(), "text-hunk": TextHunk()}


def reproduces(kind: str, found: list[Found], rel: str, blines: list[str], flines: list[str]) -> bool:
    parts = [KINDS[kind].part(blines, parsed, rel) for _, _, parsed, _, _, _ in found]
    return all(p is not None for p in parts) and splice(blines, [p for p in parts if p]) == "".join(flines)


def by_key(rel: str, fmt: str, blines: list[str], flines: list[str]) -> list[Found] | None:
    base = {n.path: n for n in keypath.nodes(blines, fmt)}
    fork_nodes = keypath.nodes(flines, fmt)
    fork = {n.path: n for n in fork_nodes}
    found: list[Found] = []
    covered: list[tuple[str, ...]] = []

    def text(lines: list[str], n: keypath.Node) -> str:
        return keypath.piece(lines, n, fmt)

    def under(path: tuple[str, ...]) -> bool:
        return any(path[: len(c)] == c for c in covered)

    for n in sorted(fork_nodes, key=lambda n: (n.start, len(n.path))):
        if under(n.path):
            continue
        b = base.get(n.path)
        now = text(flines, n)
        if b is not None and text(blines, b) == now:
            continue
        kids = any(len(p) > len(n.path) and p[: len(n.path)] == n.path for p in fork)
        if b is not None and kids and _own_lines(flines, n, fork_nodes) == _own_lines(blines, b, list(base.values())):
            continue  # only keys inside it changed: they are patches of their own
        if b is None:
            # a new key keeps a blank line that follows it between blank lines, as the fork has it
            end = (
                n.end + 1
                if n.end < len(flines) and not flines[n.end].strip() and n.start and not flines[n.start - 1].strip()
                else n.end
            )
            now = keypath.piece(flines, replace(n, end=end), fmt)
        nxt = [
            s
            for s in fork_nodes
            if s.path[:-1] == n.path[:-1] and len(s.path) == len(n.path) and s.start >= n.end and s.path in base
        ]
        raw: dict[str, Any] = {"path": list(n.path), "now": now}
        if b is not None:
            raw["was"] = text(blines, b)
            if _comments(flines, n) == _comments(blines, b):  # unchanged comments stay upstream's
                raw = {
                    **raw,
                    "now": keypath.piece(flines, n, fmt, comments=False),
                    "was": keypath.piece(blines, b, fmt, comments=False),
                }
        elif nxt:
            raw["before"] = nxt[0].path[-1]
        found.append(
            (
                "config-key",
                raw,
                _key_params(raw),
                n.start + 1,
                f"key {keypath.dotted(n.path)}",
                range(n.start + 1, n.end + 1),
            )
        )
        covered.append(n.path)
    for path, b in sorted(base.items(), key=lambda kv: kv[1].start):
        if path not in fork and not under(path):
            raw = {"path": list(path), "was": text(blines, b)}
            found.append(("config-key", raw, _key_params(raw), 1, f"key {keypath.dotted(path)} removed", range(0)))
            covered.append(path)
    return found if found and reproduces("config-key", found, rel, blines, flines) else None


def _comments(lines: list[str], n: keypath.Node) -> list[str]:
    """The comment lines above the key's own line."""
    lead = next(i for i in range(n.end - n.start) if not lines[n.start + i].lstrip().startswith("#"))
    return [ln.strip() for ln in lines[n.start : n.start + lead]]


def _own_lines(lines: list[str], n: keypath.Node, nodes: list[keypath.Node]) -> list[str]:
    """A key's lines less those of the keys inside it: what changes with the key itself."""
    inner = {
        i for m in nodes if len(m.path) == len(n.path) + 1 and m.path[:-1] == n.path for i in range(m.start, m.end)
    }
    return [lines[i].rstrip() for i in range(n.start, n.end) if i not in inner and lines[i].strip()]


def _key_params(raw: dict[str, Any]) -> KeyParams:
    return KeyParams(tuple(raw["path"]), raw.get("was"), raw.get("now"), raw.get("before"))


def by_package(rel: str, blines: list[str], flines: list[str]) -> list[Found] | None:
    def index(lines: list[str]) -> dict[str, int] | None:
        out: dict[str, int] = {}
        for i, ln in enumerate(lines):
            name = package_of(ln)
            if name in out:
                return None  # one package on two lines (markers per platform): hunks say it better
            if name:
                out[name] = i
        return out

    base, fork = index(blines), index(flines)
    if base is None or fork is None:
        return None
    found: list[Found] = []
    for name, i in sorted(fork.items(), key=lambda kv: kv[1]):
        now = flines[i].rstrip("\r\n")
        if name in base and blines[base[name]].rstrip("\r\n") == now:
            continue
        raw: dict[str, Any] = {"package": name, "now": now}
        if name in base:
            raw["was"] = blines[base[name]].rstrip("\r\n")
        else:
            later = [n for n, j in sorted(fork.items(), key=lambda kv: kv[1]) if j > i and n in base]
            raw.update({"before": later[0]} if later else {})
        found.append(
            (
                "requirement",
                raw,
                _req_params(raw),
                i + 1,
                f"{name} {'pinned' if 'was' in raw else 'added'}",
                range(i + 1, i + 2),
            )
        )
    for name, i in base.items():
        if name not in fork:
            raw = {"package": name, "was": blines[i].rstrip("\r\n")}
            found.append(("requirement", raw, _req_params(raw), 1, f"{name} removed", range(0)))
    return found if found and reproduces("requirement", found, rel, blines, flines) else None


def _req_params(raw: dict[str, Any]) -> ReqParams:
    return ReqParams(raw["package"], raw.get("was"), raw.get("now"), raw.get("before"))
