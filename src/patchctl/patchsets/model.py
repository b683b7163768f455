"""What a patchset is, and the outcomes a patch can end in."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

from patchctl.records import field, record


class Outcome(str, enum.Enum):
    """How ``apply`` (or ``revert``) ended for one patch. Spelled as users see it."""

    APPLIED = "applied"
    ALREADY_APPLIED = "already-applied"
    SUPERSEDED_UPSTREAM = "superseded-upstream"
    NOT_APPLICABLE = "not-applicable"
    AMBIGUOUS = "ambiguous"
    CONFLICT = "conflict"
    REVERTED = "reverted"
    NOT_APPLIED = "not-applied"
    #: would have been applied or reverted, but the change as a whole was refused
    HELD_BACK = "held-back"
    #: conflicted, and written at its best candidate place with conflict markers to resolve
    CONFLICT_MARKED = "conflict-marked"

    @property
    def is_failure(self) -> bool:
        return self in (Outcome.AMBIGUOUS, Outcome.CONFLICT)


class Presence(str, enum.Enum):
    """What ``verify`` found for one patch."""

    PRESENT = "present"
    MISSING = "missing"
    MODIFIED = "modified"
    SUPERSEDED_UPSTREAM = "superseded-upstream"
    NOT_APPLICABLE = "not-applicable"

    @property
    def passes(self) -> bool:
        return self in (Presence.PRESENT, Presence.SUPERSEDED_UPSTREAM, Presence.NOT_APPLICABLE)


@record(frozen=True)
class PatchResult:
    """One patch's outcome in one tree: what apply, revert and verify report alike."""

    patchset: str
    patch: str
    #: an :class:`Outcome` for apply and revert, a :class:`Presence` for verify
    status: Outcome | Presence
    #: the file the patch looked at (relative to the tree), None when no candidate exists
    path: str | None
    #: a sentence a user can act on
    reason: str
    #: a unified diff showing what differs, for conflicts and modifications
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "patchset": self.patchset,
            "patch": self.patch,
            "status": self.status.value,
            "path": self.path,
            "reason": self.reason,
            **({"detail": self.detail} if self.detail else {}),
        }


@record(frozen=True)
class UpstreamRule:
    """How to recognise that upstream already contains a change (then the patch is not needed).

    ``python-name``: any identifier, attribute or keyword named in ``names`` occurs in code
    that does not carry the tag. ``regex``: ``pattern`` matches a line without the tag.
    ``none``: upstream never has it.
    """

    #: python-name | regex | none
    kind: str = "none"
    #: identifiers for python-name
    names: tuple[str, ...] = ()
    #: a regular expression for regex
    pattern: str = ""
    #: extra files (relative to the tree) to look in besides the patch's target
    files: tuple[str, ...] = ()


@record(frozen=True)
class Resolution:
    """A conflict the user resolved by hand, replayed where the same upstream text comes back
    (``git rerere``): at the patch's anchors, upstream's ``before`` becomes ``after``."""

    #: sha256 of ``before``: the key, with the patch id, under which the resolution was recorded
    context: str
    #: the indentation ``before`` and ``after`` were recorded at
    indent: str
    #: upstream's text at the conflict's place
    before: str
    #: what the user resolved it to
    after: str
    #: the tree it was recorded on, for messages
    recorded_on: str = ""
    #: anchors of the place where the patch's own anchors led nowhere (empty: the patch's own)
    above: tuple[str, ...] = ()
    below: tuple[str, ...] = ()
    blocks: tuple[str, ...] = ()
    #: ``before`` and ``after`` are the whole file (add-file, rename-file, delete-file; empty: deleted)
    whole: bool = False
    #: the user kept upstream's text (``after`` is ``before``): the patch is dropped from ``since`` on
    keep: bool = False
    #: the verl version the tree declared when the keep was recorded ("" when it declared none)
    since: str = ""


@record(frozen=True)
class Patch:
    #: unique within its patchset, used by --only and in records
    id: str
    #: one line for tables
    title: str
    #: the reason the change exists, as a user would explain it
    why: str
    #: the comment tag every line of the change carries (``Uky`` makes ``# Uky``)
    tag: str
    #: a name from the kinds registry
    kind: str
    #: ordered candidate paths; the first that exists is patched (files renamed across versions)
    target: tuple[str, ...]
    #: the kind's own parameters, already validated by the kind
    params: Any
    upstream: UpstreamRule = UpstreamRule()
    #: a PEP 440 specifier of the verl versions the patch is meant for; None means all
    versions: str | None = None
    #: optional DEP-3 style metadata
    meta: dict[str, str] = field(default_factory=dict)
    #: ids of patches of the same patchset this one needs (its callee, the import of a name it uses)
    needs: tuple[str, ...] = ()
    #: resolutions recorded for this patch (``resolutions.toml`` beside the manifest)
    resolutions: tuple[Resolution, ...] = ()
    #: "keep upstream" records of this patch (``keep = true`` there): where it is dropped
    kept: tuple[Resolution, ...] = ()


@record(frozen=True)
class Patchset:
    name: str
    description: str
    #: the manifest's directory; add-file sources are relative to it
    root: Path
    #: the manifest file itself (for messages)
    manifest: Path
    patches: tuple[Patch, ...]
    #: sha256 of the manifest, recorded in targets so a later run can tell what was used
    digest: str
    #: True for the patchsets shipped inside patchctl
    builtin: bool = False

    def get(self, patch_id: str) -> Patch | None:
        return next((p for p in self.patches if p.id == patch_id), None)
