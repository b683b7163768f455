"""Links across files: a patch that uses what a patch of another file adds needs that patch.

:mod:`patchctl.capture.links` links patches within one file; a fork's edits also lean on each
other across files: ``from verl.utils.a import helper`` (or ``a.helper()``) in one file and the
new ``def helper`` in another, a call of a new method of a class another file defines, a config
key the code reads and a YAML patch adds. Each use is resolved by
:mod:`patchctl.capture.uses` and matched to :mod:`patchctl.capture.provides`. Only certain links
are made, since a wrong one holds back a good patch: a name two patches add, a config key BASE
already has anywhere, a method of an object whose class is not certain give no link.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from patchctl.capture.model import Draft, Request
from patchctl.capture.provides import Provided, provided
from patchctl.capture.uses import Uses, uses


def link(req: Request, drafts: Sequence[Draft]) -> tuple[Draft, ...]:
    """The drafts with the patches of other files they need added to ``needs``, in the same order."""
    given = provided(req, drafts)
    if not (given.names or given.keys):
        return tuple(drafts)
    users: dict[str, list[Draft]] = {}
    for d in drafts:
        if d.path.endswith(".py") and (d.kind == "add-file" or d.fork_lines):
            users.setdefault(d.path, []).append(d)
    extra: dict[str, list[str]] = {}
    for rel, mine in users.items():
        new = next((d for d in mine if d.kind == "add-file"), None)
        try:
            text = (new.content or b"").decode("utf-8") if new else (req.fork.root / rel).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        lines = text.splitlines()
        spans = {d.id: None if d.kind == "add-file" else d.fork_lines for d in mine}
        changed = sorted({n for d in mine for n in d.fork_lines if n <= len(lines)})
        if not given.named_by(rel, lines if new else [lines[n - 1] for n in changed], text):
            continue  # its edits name nothing another file provides: no need to resolve its names
        for pid, used in uses(rel, text, spans).items():
            extra[pid] = _partners(used, given, rel, pid)
    return tuple(
        replace(d, needs=tuple(dict.fromkeys(d.needs + tuple(extra[d.id])))) if extra.get(d.id) else d for d in drafts
    )


def _partners(used: Uses, given: Provided, rel: str, pid: str) -> list[str]:
    """Ids of the patches of other files that provide what ``used`` names."""
    found: list[Draft] = []
    for q in sorted(used.names):
        parts = q.split(".")
        prefixes = (".".join(parts[:n]) for n in range(len(parts), 0, -1))
        d = given.names.get(q) or next((given.modules[p] for p in prefixes if p in given.modules), None)
        found += [d] if d else []
    for _, (path, d) in sorted(given.keys.items()):
        if any(_reads(chain, path) for chain in used.chains):
            found.append(d)
    return [d.id for d in found if d.path != rel and d.id != pid]


def _reads(chain: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """Whether code reading ``chain`` reads the key at ``path``: the key's name in the chain, right after
    its parent key's name or after a config object (``config``, ``self.cfg``)."""
    return any(
        chain[j] == path[-1]
        and ((len(path) > 1 and chain[j - 1] == path[-2]) or re.search("config|cfg", chain[j - 1], re.I))
        for j in range(1, len(chain))
    )
