"""What ``drift`` found: per patch, its outcome on both sides and the upstream regions under it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from patchctl.patchsets.model import PatchResult

#: region statuses that say nothing moved under the patch
#: (``metadata``: beside an added file only packaging metadata and docs changed, said in one line)
QUIET = ("unchanged", "outside-tree", "absent", "metadata")


@dataclass(frozen=True)
class Region:
    """One piece of upstream code a patch depends on, compared between the two trees."""

    #: file | scope | callee | beside
    what: str
    #: e.g. ``verl/x.py``, ``verl/x.py:Trainer.fit``, ``AsyncLLM.from_vllm_config``
    name: str
    #: unchanged | changed | renamed | moved | deleted | added | outside-tree | absent | metadata
    status: str
    #: the changes that carry meaning (a default, a parameter, a move, a rename)
    flags: tuple[str, ...] = ()
    #: the upstream diff of the region, trimmed
    diff: str = ""

    @property
    def changed(self) -> bool:
        return self.status not in QUIET

    def to_json(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "name": self.name,
            "status": self.status,
            "flags": list(self.flags),
            "diff": self.diff,
        }


@dataclass(frozen=True)
class PatchDrift:
    patchset: str
    patch: str
    kind: str
    before: PatchResult
    after: PatchResult
    regions: tuple[Region, ...]

    @property
    def outcome_changed(self) -> bool:
        return self.before.status is not self.after.status

    @property
    def changed(self) -> bool:
        return self.outcome_changed or any(r.changed for r in self.regions)

    @property
    def flags(self) -> list[str]:
        out = [f"outcome: {self.before.status.value} -> {self.after.status.value}"] if self.outcome_changed else []
        return out + [f for r in self.regions for f in r.flags]

    def to_json(self) -> dict[str, Any]:
        return {
            "patchset": self.patchset,
            "patch": self.patch,
            "kind": self.kind,
            "changed": self.changed,
            "outcome": {"from": self.before.to_json(), "to": self.after.to_json(), "changed": self.outcome_changed},
            "flags": self.flags,
            "regions": [r.to_json() for r in self.regions],
        }


@dataclass(frozen=True)
class Drift:
    source: str
    dest: str
    source_version: str | None
    dest_version: str | None
    patches: tuple[PatchDrift, ...]

    @property
    def changed(self) -> bool:
        return any(p.changed for p in self.patches)

    def to_json(self) -> dict[str, Any]:
        return {
            "from": {"label": self.source, "version": self.source_version},
            "to": {"label": self.dest, "version": self.dest_version},
            "changed": self.changed,
            "patches": [p.to_json() for p in self.patches],
        }
