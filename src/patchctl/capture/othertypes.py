"""Changed files that are not Python: configs by key path, requirement lists by package, other
text by hunk, and binary files as blobs.

Each file's edits are drafted as the narrowest kind that re-creates them: a YAML or TOML file as
config-key patches, a requirements file as requirement patches. The drafts are kept only when,
spliced together over BASE, they give exactly the fork's file; otherwise (an edit no key holds,
such as a comment at the top) the file is carried as text hunks, which always re-create it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Set
from dataclasses import replace
from pathlib import Path
from typing import Any

from patchctl import fsutil
from patchctl.capture.hunks import Hunk, diff, why_from
from patchctl.capture.model import Classified, Draft, LeftOut, Request, new_id, splice
from patchctl.patchsets.kinds import keypath
from patchctl.patchsets.kinds.blob import MAX_BLOB
from patchctl.patchsets.kinds.config_key import ConfigKey
from patchctl.patchsets.kinds.config_key import Params as KeyParams
from patchctl.patchsets.kinds.pyparse import split_lines
from patchctl.patchsets.kinds.requirement import Params as ReqParams
from patchctl.patchsets.kinds.requirement import Requirement, package_of
from patchctl.patchsets.kinds.swap import Swap
from patchctl.patchsets.kinds.text_hunk import Params as HunkParams
from patchctl.patchsets.kinds.text_hunk import TextHunk

#: lines of context a text hunk carries on each side, as diff -u
CONTEXT = 3
_REQUIREMENTS = re.compile(r"(^|/)[^/]*requirements[^/]*\.(txt|in)$")

#: a drafted edit before it gets an id: kind, params, the kind's parsed params, first fork line, what it
#: is, and the 1-based fork lines it writes (where a tag makes it the user's edit)
Found = tuple[str, dict[str, Any], Any, int, str, range]


def is_binary(data: bytes) -> bool:
    if b"\0" in data[:8192]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def blob(req: Request, rel: str, data: bytes, replaces: bytes | None, mode: int, taken: Set[str]) -> Classified:
    """A binary file the fork added or changed, shipped whole with its sha256: with ``--all``, or when
    its bytes carry the tag (a binary file seldom can, but one that does is the user's)."""
    tagged = req.rx.search(data.decode("utf-8", errors="replace")) is not None
    if not req.all_ and not tagged:
        return Classified(
            notes=(
                f"{rel}: binary file the fork {'changed' if replaces else 'added'}; binary files "
                "carry no tag, so it is captured with --all only",
            )
        )
    if len(data) > MAX_BLOB:
        return Classified(
            left_out=(
                LeftOut(
                    rel,
                    1,
                    f"binary file of {len(data)} bytes, over the {MAX_BLOB >> 20} MiB "
                    "a blob may have; ship it another way",
                ),
            )
        )
    params: dict[str, Any] = {"source": f"files/{rel}", "sha256": fsutil.sha256_bytes(data), "mode": f"{mode:04o}"}
    if replaces is not None:
        params["replaces"] = fsutil.sha256_bytes(replaces)
    what = "replace" if replaces is not None else "add"
    return Classified(
        (
            Draft(
                new_id(Path(rel).name, taken),
                "blob",
                rel,
                None,
                tagged,
                f"{what} {rel} (binary)",
                "",
                params,
                content=data,
            ),
        )
    )


def changed_text(req: Request, rel: str, base_text: str, fork_text: str, taken: Set[str]) -> Classified:
    """A text file both trees have that is neither Python nor shell."""
    blines, flines = split_lines(base_text), split_lines(fork_text)
    fmt = keypath.fmt_of(rel)
    found: list[Found] | None = None
    if fmt is not None:
        found = _by_key(rel, fmt, blines, flines)
    elif _REQUIREMENTS.search(rel):
        found = _by_package(rel, blines, flines)
    note: tuple[str, ...] = ()
    if found is None:
        if fmt is not None or _REQUIREMENTS.search(rel):
            note = (
                f"{rel}: an edit outside any {'key' if fmt else 'package line'}; the file is carried as text "
                "hunks instead",
            )
        found = hunks(rel, blines, flines)
    drafts: list[Draft] = []
    skipped = 0
    for kind, params, parsed, line, what, span in found:
        tagged = [n for n in span if 0 < n <= len(flines) and req.rx.search(flines[n - 1])]
        if not tagged and not req.all_:
            skipped += 1
            continue
        stem = params["path"][-1] if kind == "config-key" else params.get("package", "hunk")
        pid = new_id(f"{Path(rel).stem}-{stem}", taken)
        taken = taken | {pid}
        part = _KINDS[kind].part(blines, parsed, rel)
        drafts.append(
            Draft(
                pid,
                kind,
                rel,
                line,
                bool(tagged),
                f"{rel}: {what}",
                why_from(flines, tagged, req.tag),
                params,
                part=part,
                base_lines=blines,
            )
        )
    if skipped:
        note += (f"{rel}: {skipped} untagged change(s) not captured (pass --all to capture them)",)
    return Classified(tuple(drafts), (), note)


_KINDS: dict[str, Swap] = {"config-key": ConfigKey(), "requirement": Requirement(), "text-hunk": TextHunk()}


def _reproduces(kind: str, found: list[Found], rel: str, blines: list[str], flines: list[str]) -> bool:
    parts = [_KINDS[kind].part(blines, parsed, rel) for _, _, parsed, _, _, _ in found]
    return all(p is not None for p in parts) and splice(blines, [p for p in parts if p]) == "".join(flines)


def _by_key(rel: str, fmt: str, blines: list[str], flines: list[str]) -> list[Found] | None:
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
    return found if found and _reproduces("config-key", found, rel, blines, flines) else None


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


def _by_package(rel: str, blines: list[str], flines: list[str]) -> list[Found] | None:
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
    return found if found and _reproduces("requirement", found, rel, blines, flines) else None


def _req_params(raw: dict[str, Any]) -> ReqParams:
    return ReqParams(raw["package"], raw.get("was"), raw.get("now"), raw.get("before"))


def hunks(rel: str, blines: list[str], flines: list[str], keep: Callable[[Hunk], bool] = lambda h: True) -> list[Found]:
    """The file's changes as text hunks with :data:`CONTEXT` lines around; hunks whose context would
    touch are one hunk, so that each finds its place in the text the ones before it left."""
    groups: list[list[Hunk]] = []
    for h in diff(blines, flines, re.compile(r"(?!x)x")):
        if not keep(h):
            continue
        if groups and h.base[0] - groups[-1][-1].base[1] <= 2 * CONTEXT:
            groups[-1].append(h)
        else:
            groups.append([h])
    found: list[Found] = []
    for g in groups:
        lo = max(0, g[0].base[0] - CONTEXT)
        hi = min(len(blines), g[-1].base[1] + CONTEXT)
        flo = lo + (g[0].fork[0] - g[0].base[0])
        fhi = hi + (g[-1].fork[1] - g[-1].base[1])
        was, now = "".join(blines[lo:hi]), "".join(flines[flo:fhi])
        if [x.rstrip() for x in split_lines(was)] == [x.rstrip() for x in split_lines(now)]:
            continue  # trailing spaces only: no text a hunk could be found by differs
        raw = {"was": was, "now": now, "line": lo + 1}
        changed = sorted({n for h in g for n in h.fork_lines})
        found.append(
            (
                "text-hunk",
                raw,
                HunkParams(was, now, lo + 1, 2),
                g[0].fork[0] + 1,
                "hunk",
                range(changed[0], changed[-1] + 1) if changed else range(0),
            )
        )
    return found
