"""What ``patchctl verify`` says about the tree migrate is about to send.

Migrate's own check proves the transfer (every file's sha256 on the host equals the source's);
it says nothing of the patches. A tree with a hand-edited patch arrived "ok and verified" while
``patchctl verify`` failed on it. So the source is verified first, and the CLI refuses a patched
tree that fails (unless told to go on) and says, in its last line, what the source was.

The answer is remembered while nothing it was worked out from changes (:mod:`source_memo`): a
no-change re-run gives the last one without parsing the patches' files again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from patchctl.migrate import source_memo

if TYPE_CHECKING:
    from patchctl.patchsets.model import Patchset
    from patchctl.target import Target


@dataclass(frozen=True)
class SourceCheck:
    """``patchctl verify`` of the source tree, as migrate reports it."""

    #: the patchsets verified, by name
    patchsets: tuple[str, ...]
    #: every patch is present (or superseded upstream, or not applicable)
    ok: bool
    #: the tree carries patches: an applied record, or at least one patch present or modified;
    #: False for a tree none of the patchsets was applied to (sent as it is, with a warning)
    patched: bool
    #: "patch status" for each patch that fails, in manifest order
    problems: tuple[str, ...]

    def describe(self) -> str:
        """``uky: a modified, b missing`` (at most five named): what the warning and the last line say."""
        shown = ", ".join(self.problems[:5]) + (f" and {len(self.problems) - 5} more" if len(self.problems) > 5 else "")
        return f"{' + '.join(self.patchsets)}: {shown}"

    def to_json(self) -> dict[str, object]:
        return {
            "patchsets": list(self.patchsets),
            "ok": self.ok,
            "patched": self.patched,
            "problems": list(self.problems),
        }


def check(tree: Target, patchsets: Sequence[Patchset]) -> SourceCheck:
    """Verify ``tree`` against ``patchsets``, as ``patchctl verify --target TREE`` would (its
    leftover temp files aside: migrate never sends those). The tree's tagged lines are not
    listed here: the presence of each patch is what this check reports, and the inventory the
    hosts are checked against comes from the file set's hash cache (one walk of the tree, not two).
    The last answer is given again while nothing it read has changed (see source_memo)."""
    kept = _answer(source_memo.recall(tree.root, tree.version, patchsets))
    if kept is not None:
        return kept
    # here, not at the top: the check's modules (the patch kinds, the parsers) load only when it runs
    from patchctl.migrate.hashcache import clock

    since = clock()  # before any file is read: the memo's racily clean rule
    found, read = _check(tree, patchsets)
    source_memo.keep(tree.root, tree.version, patchsets, read, since, found.to_json())
    return found


def _answer(kept: dict[str, Any] | None) -> SourceCheck | None:
    """The remembered answer as a :class:`SourceCheck`; None for one of another shape (not
    written by this patchctl: the check runs again)."""
    if kept is None:
        return None
    names, ok, patched, problems = (kept.get(k) for k in ("patchsets", "ok", "patched", "problems"))
    texts = all(isinstance(x, list) and all(isinstance(t, str) for t in x) for x in (names, problems))
    if not texts or not isinstance(ok, bool) or not isinstance(patched, bool):
        return None
    return SourceCheck(tuple(names), ok, patched, tuple(problems))  # type: ignore[arg-type]


def _check(tree: Target, patchsets: Sequence[Patchset]) -> tuple[SourceCheck, set[str]]:
    """The check itself, and the tree's files it read or looked for (relative paths)."""
    from patchctl.patchsets import conflicts
    from patchctl.patchsets import record as rec
    from patchctl.patchsets.model import Presence
    from patchctl.verify.patches import verify

    reader = _recording(tree)
    report = verify(tree, list(patchsets), inventory=False, tree=reader)
    bad = [c for c in report.checks if not (isinstance(c.status, Presence) and c.status.passes)]
    carried = any(c.status in (Presence.PRESENT, Presence.MODIFIED) for c in report.checks)
    found = SourceCheck(
        tuple(ps.name for ps in patchsets),
        not bad,
        carried or rec.load(tree.root) is not None,
        tuple(f"{c.patch} {c.status.value}" for c in bad),
    )
    return found, reader.touched | {rec.RECORD_PATH, conflicts.STATE_PATH}


def _recording(tree: Target) -> Any:
    """A :class:`~patchctl.patchsets.reader.TreeReader` of ``tree`` that notes every path it is
    asked about (read, looked for, its mode asked), in ``touched``."""
    from patchctl.patchsets.reader import TreeReader

    class Recording(TreeReader):
        def __init__(self, target: Target) -> None:
            super().__init__(target)
            self.touched: set[str] = set()

        def read(self, rel: str, *, binary: bool = False) -> str | None:
            self.touched.add(rel)
            return super().read(rel, binary=binary)

        def exists(self, rel: str) -> bool:
            self.touched.add(rel)
            return super().exists(rel)

        def confined(self, rel: str) -> str | None:
            self.touched.add(rel)
            return super().confined(rel)

        def mode_of(self, rel: str) -> int | None:
            self.touched.add(rel)
            return super().mode_of(rel)

    return Recording(tree)
