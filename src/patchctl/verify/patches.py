"""``patchctl verify``: each patch's postcondition, checked on the code's structure."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from patchctl.journal import TMP_SUFFIX
from patchctl.patchsets import record as rec
from patchctl.patchsets.engine import Plan, TreeReader, assess
from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.model import Patchset, Presence
from patchctl.target import Target
from patchctl.tags import TagHit, scan


@dataclass(frozen=True)
class PatchCheck:
    patchset: str
    patch: str
    presence: Presence
    path: str | None
    reason: str
    detail: str = ""


@dataclass
class Report:
    target: Target
    checks: list[PatchCheck] = field(default_factory=list)
    #: tagged lines that some present patch accounts for
    accounted: list[TagHit] = field(default_factory=list)
    #: tagged lines no patch accounts for: hand edits worth capturing
    unaccounted: list[TagHit] = field(default_factory=list)
    #: temp files of an interrupted write no journal accounts for (relative paths)
    leftovers: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.presence.passes for c in self.checks) and not self.leftovers


def verify(target: Target, patchsets: list[Patchset]) -> Report:
    report = Report(target)
    tree = TreeReader(Plan(target))
    record = rec.load(target.root)
    owned: dict[str, set[int]] = {}
    for ps in patchsets:
        for patch in ps.patches:
            entry = record.find(ps.name, patch.id) if record else None
            a = assess(patch, tree, ps.root)
            if a.skip is not None or a.found is None or a.path is None:
                presence = Presence.MISSING if entry else Presence.NOT_APPLICABLE
                report.checks.append(PatchCheck(ps.name, patch.id, presence, a.path, a.skip or ""))
                continue
            path, found = a.path, a.found
            owned.setdefault(path, set()).update(found.owned_lines)
            if found.presence is not Presence.MISSING:
                report.checks.append(PatchCheck(ps.name, patch.id, found.presence, path, found.reason, found.detail))
                continue
            if a.superseded:
                report.checks.append(PatchCheck(ps.name, patch.id, Presence.SUPERSEDED_UPSTREAM, path, a.superseded))
                continue
            would = KINDS[patch.kind].apply(tree.read(path), patch, Context(ps.root, path))
            if would.status is EditStatus.NOT_APPLICABLE and not entry:
                report.checks.append(PatchCheck(ps.name, patch.id, Presence.NOT_APPLICABLE, path, would.reason))
                continue
            why = f"{found.reason}; run patchctl apply" + (f" (it was applied {entry.applied_at})" if entry else "")
            report.checks.append(PatchCheck(ps.name, patch.id, Presence.MISSING, path, why))
    tags = {p.tag for ps in patchsets for p in ps.patches}
    for hit in scan(target.root, tags):
        (report.accounted if hit.line in owned.get(hit.path, ()) else report.unaccounted).append(hit)
    report.leftovers = leftover_temp_files(target.root)
    return report


def leftover_temp_files(root: Path) -> list[str]:
    """``*.patchctl-tmp`` files in the tree: debris of a write that was cut off (and that
    ``migrate`` must never ship). A journaled write never leaves them once recovered."""
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        out += [os.path.relpath(os.path.join(folder, f), root) for f in files if f.endswith(TMP_SUFFIX)]
    return sorted(out)
