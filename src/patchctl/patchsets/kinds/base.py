"""The contract every patch kind fulfils, and the result values it returns.

A kind never raises for a target that merely does not fit; it returns an :class:`Edit` or
:class:`Check` with a status and a reason (the LibCST codemod habit). It raises only for bad
input the user must fix (a syntax error in the target), via :class:`PatchctlError`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Protocol

from patchctl.patchsets.model import Outcome, Patch, Presence
from patchctl.records import record
from patchctl.schema import Schema


class EditStatus(str, enum.Enum):
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    NOT_APPLICABLE = "not-applicable"
    AMBIGUOUS = "ambiguous"
    CONFLICT = "conflict"

    def outcome(self) -> Outcome:
        return {
            EditStatus.CHANGED: Outcome.APPLIED,
            EditStatus.UNCHANGED: Outcome.ALREADY_APPLIED,
            EditStatus.NOT_APPLICABLE: Outcome.NOT_APPLICABLE,
            EditStatus.AMBIGUOUS: Outcome.AMBIGUOUS,
            EditStatus.CONFLICT: Outcome.CONFLICT,
        }[self]


@record(frozen=True)
class Edit:
    """What a forward or reverse codemod made of one file."""

    status: EditStatus
    #: a sentence a user can act on
    reason: str
    #: the file's new text when ``status`` is CHANGED; None with CHANGED means delete the file
    text: str | None = None
    #: permission bits to set on the file (add-file); None keeps the mode
    mode: int | None = None
    #: what differs, as a unified diff, for conflicts
    detail: str = ""
    #: facts the reverse needs that the patched text cannot show (kept in the target's record)
    undo: dict[str, Any] | None = None
    #: other files the edit writes besides its target (rename-file removes its source): path, text or None
    #: (delete), permission bits or None
    also: tuple[tuple[str, str | None, int | None], ...] = ()


@record(frozen=True)
class Check:
    """Whether a patch's postcondition holds in one file."""

    presence: Presence
    reason: str
    #: 1-based line numbers the patch accounts for (its tagged lines)
    owned_lines: frozenset[int] = frozenset()
    #: what differs, as a unified diff, when modified
    detail: str = ""


@record(frozen=True)
class Context:
    """What a kind may know beyond the file text."""

    #: the patch's manifest directory (add-file reads its sources there)
    patchset_root: Path
    #: path of the target file relative to the tree, for messages
    path: str
    #: what :attr:`Edit.undo` held when the patch was applied, for revert
    undo: dict[str, Any] | None = None
    #: reads another file of the tree through pending changes, confined to the tree (rename-file's source)
    read: Callable[[str], str | None] | None = None
    #: the permission bits of another file of the tree (a moved script stays executable)
    mode_of: Callable[[str], int | None] | None = None


class PatchKind(Protocol):
    """A codemod with a forward (apply), a reverse (revert) and a postcondition (check).

    Three class attributes are optional (read with a default, so the older kinds need not say them):
    ``binary`` (default False), the target is read as any bytes, not UTF-8 text (blob, delete-file,
    rename-file); ``takes_lines_along`` (default True for a kind that ``creates_target``), reverting
    it removes the file with other patches' lines in it (add-file, not rename-file or delete-file);
    ``proof_cached`` (default False), its check reads nothing but the text, the patch and the
    file's name, so a ``present`` is kept for an unchanged text (:mod:`~patchctl.patchsets.proofs`).
    """

    name: ClassVar[str]
    description: ClassVar[str]
    #: the declared schema of ``[patch.params]``
    params_schema: ClassVar[Schema]
    #: whether the target may be absent before applying (add-file creates it)
    creates_target: ClassVar[bool]

    def parse_params(self, raw: dict[str, Any], patchset_root: Path, manifest: Path, patch_id: str) -> Any: ...

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check: ...

    def apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit: ...

    def revert(self, text: str | None, patch: Patch, ctx: Context) -> Edit: ...


def tag_comment(tag: str) -> str:
    return f"# {tag}"
