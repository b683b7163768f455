"""One patch's outcome at one upstream commit, from the few files it reads.

A probe writes only the files the patch looks at (its candidate targets, its upstream rule's
files, and verl's ``__init__.py`` and version file) from ``git cat-file`` into a scratch folder
and runs the real apply planner there (:func:`~patchctl.patchsets.plan.plan_apply`), so the
outcome and its reason are exactly what ``apply`` and ``matrix`` would say on that commit.
Nothing is written in the repository.
"""

from __future__ import annotations

import dataclasses
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchctl.confine import in_metadata, relative_inside
from patchctl.drift import history
from patchctl.errors import OutsideTree, PatchctlError
from patchctl.patchsets.model import Outcome, Patch, Patchset
from patchctl.patchsets.plan import plan_apply
from patchctl.target import open_tree

#: what every probe reads besides the patch's own files: open_tree needs the first, the
#: patch's ``versions`` specifier the second
ALWAYS = ("verl/__init__.py", "verl/version/version")
#: how the planner says that none of the candidate files exists (reader.assess)
NO_FILE = "none of its target files exists"


@dataclass(frozen=True)
class Probe:
    """The outcome at one commit, or why that commit could not be judged."""

    sha: str
    #: None when the commit was skipped
    status: Outcome | None
    path: str | None
    reason: str
    #: why the commit was skipped (a file that does not parse, not a verl tree), else None
    skipped: str | None = None

    @property
    def file_missing(self) -> bool:
        return self.status is Outcome.NOT_APPLICABLE and self.reason.startswith(NO_FILE)

    def to_json(self) -> dict[str, Any]:
        return {
            "commit": self.sha,
            "status": self.status.value if self.status else None,
            "path": self.path,
            "reason": self.reason,
            "skipped": self.skipped,
        }


def files_of(patch: Patch, manifest: Path) -> list[str]:
    """The files a probe materializes, each checked to stay inside the tree (a patchset is untrusted)."""
    out = []
    for rel in (*ALWAYS, *patch.target, *patch.upstream.files):
        problem = relative_inside(rel) or (f"lies in {in_metadata(rel)}" if in_metadata(rel) else None)
        if problem:
            raise OutsideTree(manifest, rel, problem, patch.id)
        if rel not in out:
            out.append(rel)
    return out


def upto(patchset: Patchset, patch: Patch) -> Patchset:
    """``patch`` with the earlier patches that edit one of its files, in manifest order: a
    ``shell-env`` patch on a script an ``add-file`` patch ships sees the script, as in ``apply``."""
    mine = set(patch.target)
    earlier = []
    for p in patchset.patches:
        if p is patch:
            break
        if mine & set(p.target):
            earlier.append(p)
    return dataclasses.replace(patchset, patches=(*earlier, patch))


def probe(repo: Path, sha: str, patchset: Patchset, patch: Patch, scratch: Path) -> Probe:
    """Plan ``patch`` alone on the files of commit ``sha``; ``scratch`` is emptied afterwards."""
    root = scratch / sha[:16]
    try:
        planned = upto(patchset, patch)
        for rel in dict.fromkeys(f for p in planned.patches for f in files_of(p, patchset.manifest)):
            data = history.read(repo, sha, rel)
            if data is not None:
                dest = root / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(data)
        if not (root / "verl" / "__init__.py").is_file():
            return Probe(sha, None, None, "", "not a verl tree (no verl/__init__.py)")
        tree = dataclasses.replace(open_tree(root, sha[:12]), commit=sha)
        try:
            result = plan_apply(tree, [planned]).results[-1]
        except PatchctlError as exc:  # a file that does not parse, not UTF-8: git bisect skip
            return Probe(sha, None, None, "", _relative(str(exc), root))
        return Probe(sha, Outcome(result.status.value), result.path, _relative(result.reason, root))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _relative(text: str, root: Path) -> str:
    """Messages name files in the scratch folder; the user knows them by their path in the tree."""
    return text.replace(f"{root.resolve()}/", "").replace(f"{root}/", "")
