"""What ``bench_forks.py`` measures on one planned tree: whether a patch's edit is there (the
patch's own check, for git's result and patchctl's alike), a placed edit to read, anchor sizes,
whether a conflict's scope reads the same by syntax on the base, and the kind of a conflict's
reason."""

from __future__ import annotations

import ast
from pathlib import Path

from patchctl.errors import PatchctlError
from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.kinds.base import Context
from patchctl.patchsets.model import Patch, Patchset, Presence
from patchctl.patchsets.placement import anchors as st


def present(patch: Patch, ps: Patchset, text: str | None) -> tuple[bool, list[int]]:
    try:
        found = KINDS[patch.kind].check(text, patch, Context(ps.root, patch.target[0]))
    except PatchctlError:  # e.g. git's clean merge left a file that is not valid Python
        return False, []
    return found.presence is Presence.PRESENT, sorted(found.owned_lines)


def spot(name: str, label: str, p: Patch, ps: Patchset, text: str | None) -> list[str]:
    """A placed edit to read: where the fork had it (scope, anchors, its text) and the lines
    the patched tree now holds there, two either side."""
    where = present(p, ps, text)[1]
    lines = (text or "").splitlines()
    if not where or not lines:
        return []
    q = p.params
    fork = (
        f"scope {q.scope or '(module)'}{''.join(f' > {b}' for b in q.blocks)}; after `{q.above[-1] if q.above else ''}`"
        f", before `{q.below[0] if q.below else ''}`; fork text:\n{q.after}"
        if p.kind == "structural"
        else f"{p.kind}: {p.params}\n"
    )
    shown = "\n".join(lines[max(where[0] - 3, 0) : where[-1] + 2])
    return [f"--- {name} {label} {p.id} {p.target[0]}:{where[0]}-{where[-1]}\n{fork}--- placed:\n{shown}\n"]


def anchor_sizes(ps: Patchset) -> list[int]:
    return [
        len(p.params.before.splitlines()) + len(p.params.above) + len(p.params.below) + len(p.params.blocks)
        for p in ps.patches
        if p.kind == "structural"
    ]


def same_scope(patch: Patch, base: Path, version: Path) -> bool:
    """Whether the patch's scope has the same syntax tree on BASE and on the version."""
    files = [base / patch.target[0], version / patch.target[0]]
    if patch.kind != "structural" or not all(f.is_file() for f in files):
        return False
    try:
        dumps = [
            [ast.dump(n) for n in st.find_scopes(ast.parse(f.read_text(encoding="utf-8")), patch.params.scope)]
            for f in files
        ]
    except (SyntaxError, UnicodeDecodeError):
        return False
    return bool(dumps[0]) and dumps[0] == dumps[1]


def reason_class(reason: str) -> str:
    """A conflict's reason, by the words the structural kind's explanation uses."""
    if "has no statement" in reason or "has no block" in reason or ("has no " in reason and "scope" in reason):
        return "anchor"
    if "hold other code" in reason or "differs" in reason:
        return "code"
    if "not next to each other" in reason:
        return "order"
    return "other"
