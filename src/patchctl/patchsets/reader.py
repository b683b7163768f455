"""Reading a tree as the patches see it, and where each patch stands in it.

Shared by apply, revert and verify: :func:`assess` is the one decision ladder (does the patch
concern this tree, is its change there, has upstream made it already).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from patchctl.confine import resolve_target
from patchctl.errors import NotUtf8, OutsideTree
from patchctl.patchsets import upstream
from patchctl.patchsets.kinds import KINDS, replay
from patchctl.patchsets.kinds.base import Check, Context
from patchctl.patchsets.model import Patch, Presence
from patchctl.records import record
from patchctl.target import Target


class TreeReader:
    """Reads a tree through pending changes, so later patches see earlier ones.

    ``verify`` reads with no pending changes; a :class:`~patchctl.patchsets.plan.Plan` passes
    its own dictionaries, which :meth:`write` fills.
    """

    def __init__(
        self,
        target: Target,
        after: dict[str, str | None] | None = None,
        before: dict[str, str | None] | None = None,
        modes: dict[str, int] | None = None,
    ) -> None:
        self.target = target
        #: relative path -> text after the pending changes (None: deleted)
        self.after = after if after is not None else {}
        #: relative path -> text before them (None: did not exist)
        self.before = before if before is not None else {}
        self.modes = modes if modes is not None else {}

    def read(self, rel: str, *, binary: bool = False) -> str | None:
        """The file's text; ``binary`` kinds (blob) get any bytes, carried losslessly as
        surrogate escapes that :func:`to_bytes` turns back into the same bytes."""
        if rel in self.after:
            return self.after[rel]
        path = self.target.root / rel
        if not path.is_file():
            return None
        try:
            return path.read_bytes().decode("utf-8", "surrogateescape" if binary else "strict")
        except UnicodeDecodeError:
            raise NotUtf8(path) from None

    def exists(self, rel: str) -> bool:
        return self.after[rel] is not None if rel in self.after else (self.target.root / rel).is_file()

    def confined(self, rel: str) -> str | None:
        """:meth:`read` for a path a patch names besides its target: kept inside the tree and out of .git."""
        resolve_target(self.target.root, rel)
        return self.read(rel, binary=True)

    def mode_of(self, rel: str) -> int | None:
        """The permission bits ``rel`` has, or will have after the pending changes."""
        if rel in self.modes:
            return self.modes[rel]
        path = resolve_target(self.target.root, rel)
        return path.stat().st_mode & 0o7777 if path.is_file() else None

    def read_for(self, patch: Patch, rel: str) -> str | None:
        return self.read(rel, binary=getattr(KINDS[patch.kind], "binary", False))

    def write(self, rel: str, text: str | None, mode: int | None) -> None:
        if rel not in self.before:
            self.before[rel] = self.read(rel, binary=True)
        self.after[rel] = text
        if mode is not None:
            self.modes[rel] = mode


def to_bytes(text: str) -> bytes:
    """A file's bytes from the text :meth:`TreeReader.read` gave (UTF-8 text encodes as it always did)."""
    return text.encode("utf-8", "surrogateescape")


def version_mismatch(patch: Patch, version: str | None) -> str | None:
    if not patch.versions or not version:
        return None
    from packaging.specifiers import SpecifierSet  # here: only a patch with versions (see loader._spec)
    from packaging.version import InvalidVersion, Version

    try:
        if Version(version) in SpecifierSet(patch.versions):
            return None
    except InvalidVersion:
        return None
    return f"meant for verl {patch.versions}; this tree is verl {version}"


def locate(patch: Patch, tree: TreeReader) -> str | None:
    for rel in (*patch.target, *patch.upstream.files):  # upstream files are read: confined the same way
        try:
            resolve_target(tree.target.root, rel)
        except OutsideTree as exc:
            raise OutsideTree(exc.root, exc.rel, exc.problem, patch.id) from None
    existing = [p for p in patch.target if tree.exists(p)]
    if existing:
        return existing[0]
    return patch.target[0] if KINDS[patch.kind].creates_target else None


@record(frozen=True)
class Assessment:
    """Where a patch stands in a tree before anything is written.

    The steps ``apply`` and ``verify`` share, in their order: does the patch concern this tree
    (version, target file), what does its kind's postcondition say, and, when the change is not
    there, has upstream made it already.
    """

    path: str | None
    #: why the patch does not concern this tree, else None
    skip: str | None = None
    found: Check | None = None
    #: where upstream already has the change (only asked when the change is missing), else None
    superseded: str | None = None


def assess(patch: Patch, tree: TreeReader, patchset_root: Path, undo: dict[str, Any] | None = None) -> Assessment:
    """``undo``: what the record kept when the patch was applied (verify passes it, so a placement
    the 3-way fallback made is found where it was made)."""
    path = locate(patch, tree)
    skip = version_mismatch(patch, tree.target.version)
    if skip is None and path is None:
        skip = "none of its target files exists: " + ", ".join(patch.target)
    if skip is not None or path is None:
        return Assessment(path, skip)
    text, ctx = tree.read_for(patch, path), Context(patchset_root, path, undo, read=tree.confined)
    found = KINDS[patch.kind].check(text, patch, ctx)
    kept = replay.dropped(text, patch, ctx, tree.target.version) if found.presence is not Presence.PRESENT else None
    if kept is not None:  # the user's "keep upstream" (refresh): upstream's text is the answer here
        return Assessment(path, None, Check(Presence.SUPERSEDED_UPSTREAM, kept), kept)
    superseded = (
        upstream.find(patch.upstream, path, tree.read, patch.tag) if found.presence is Presence.MISSING else None
    )
    return Assessment(path, None, found, superseded)
