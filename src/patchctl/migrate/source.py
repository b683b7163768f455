"""What ``patchctl verify`` says about the tree migrate is about to send.

Migrate's own check proves the transfer (every file's sha256 on the host equals the source's);
it says nothing of the patches. A tree with a hand-edited patch arrived "ok and verified" while
``patchctl verify`` failed on it. So the source is verified first, and the CLI refuses a patched
tree that fails (unless told to go on) and says, in its last line, what the source was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from patchctl.patchsets import record as rec
from patchctl.patchsets.model import Patchset, Presence
from patchctl.target import Target
from patchctl.verify.patches import verify


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
    hosts are checked against comes from the file set's hash cache (one walk of the tree, not two)."""
    report = verify(tree, list(patchsets), inventory=False)
    bad = [c for c in report.checks if not (isinstance(c.status, Presence) and c.status.passes)]
    carried = any(c.status in (Presence.PRESENT, Presence.MODIFIED) for c in report.checks)
    return SourceCheck(
        tuple(ps.name for ps in patchsets),
        not bad,
        carried or rec.load(tree.root) is not None,
        tuple(f"{c.patch} {c.status.value}" for c in bad),
    )
