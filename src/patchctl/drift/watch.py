"""``watch``: since a ref, the first upstream commit that changed anything under any patch.

Meant for a scheduled CI job, so it must be cheap on a mirror that gains commits daily:

- "the code under a patch" is read from git's own path history: the first commit on the
  watched branch's first-parent line that touched a file the patch edits or reads, the
  folder an added file goes into, or the module that defines the callee of a call patch
  (found at the base with ``git grep``); no tree is unpacked;
- an outcome change is found by probing both ends and, when they differ, by bisect.

``drift`` between the base and the reported commit then shows what changed and what it means.
"""

from __future__ import annotations

import glob
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchctl import git
from patchctl.drift import history
from patchctl.drift.bisect import bisect
from patchctl.drift.probe import probe
from patchctl.drift.regions import callees
from patchctl.errors import PatchctlError
from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.model import Patch, Patchset


@dataclass(frozen=True)
class Watched:
    """One patch between the base and the head."""

    patch: str
    #: the paths whose history was read
    paths: tuple[str, ...]
    #: the first commit that touched one of them, None when none did
    touched: history.Commit | None
    before: str
    after: str
    #: the first commit where the outcome differs from the base's, when it does
    outcome_changed: history.Commit | None
    #: why bisect could not name that commit, when it could not
    note: str = ""

    @property
    def changed(self) -> bool:
        return self.touched is not None or self.before != self.after

    def to_json(self) -> dict[str, Any]:
        return {
            "patch": self.patch,
            "paths": list(self.paths),
            "changed": self.changed,
            "touched": self.touched.to_json() if self.touched else None,
            "outcome": {
                "from": self.before,
                "to": self.after,
                "first": self.outcome_changed.to_json() if self.outcome_changed else None,
            },
            "note": self.note,
        }


@dataclass(frozen=True)
class Watch:
    since: str
    base: str
    head: str
    commits: int
    patches: tuple[Watched, ...]
    #: the first-parent line from base (excluded) to head, oldest first
    chain: tuple[str, ...] = ()

    @property
    def first(self) -> history.Commit | None:
        """The earliest commit that changed anything under any patch."""
        found = [c for p in self.patches for c in (p.touched, p.outcome_changed) if c is not None]
        order = {sha: i for i, sha in enumerate(self.chain)}
        return min(found, key=lambda c: order.get(c.sha, -1)) if found else None

    @property
    def changed(self) -> bool:
        return any(p.changed for p in self.patches)

    def to_json(self) -> dict[str, Any]:
        first = self.first
        return {
            "since": self.since,
            "base": self.base,
            "head": self.head,
            "commits": self.commits,
            "changed": self.changed,
            "first": first.to_json() if first else None,
            "patches": [p.to_json() for p in self.patches],
        }


def paths_of(repo: Path, base: str, patch: Patch) -> list[str]:
    """Pathspecs for the code a patch depends on (``:(glob)dir/*``: an added file's folder, not below).

    The folder is escaped for glob; every other path is literal, so a manifest's ``*`` or ``:!``
    cannot widen or invert what is watched."""
    out = [f":(literal){p}" for p in (*patch.target, *patch.upstream.files)]  # a manifest's path is no pattern
    if KINDS[patch.kind].creates_target:
        folder = patch.target[0].rsplit("/", 1)[0] if "/" in patch.target[0] else ""
        out = [f":(glob){glob.escape(folder) + '/' if folder else ''}*"]
    for callee in callees(patch):
        name = callee.rsplit(".", 1)[-1]
        done = git.run(repo, "grep", "-l", "-F", f"def {name}(", base, "--", "*.py", check=False)
        out += [":(literal)" + line.split(":", 1)[1] for line in done.stdout.splitlines() if ":" in line]
    return list(dict.fromkeys(out))


def first_touching(repo: Path, base: str, head: str, paths: list[str]) -> str | None:
    out = git.run(repo, "rev-list", "--first-parent", "--reverse", f"{base}..{head}", "--", *paths).stdout.split()
    return out[0] if out else None


def watch(repo: Path, patchsets: list[Patchset], since: tuple[str, str], head: tuple[str, str]) -> Watch:
    (since_text, since_sha), (_, head_sha) = since, head
    base = (
        since_sha
        if history.is_ancestor(repo, since_sha, head_sha)
        else history.merge_base(repo, since_sha, head_sha) or since_sha
    )
    chain = history.first_parent_chain(repo, base, head_sha)
    out = []
    with tempfile.TemporaryDirectory(prefix="patchctl-watch-") as tmp:
        for ps in patchsets:
            for patch in ps.patches:
                paths = paths_of(repo, base, patch)
                touched = first_touching(repo, base, head_sha, paths)
                a, b = probe(repo, since_sha, ps, patch, Path(tmp)), probe(repo, head_sha, ps, patch, Path(tmp))
                before = a.status.value if a.status else "unjudgeable"
                after = b.status.value if b.status else "unjudgeable"
                first, note = None, ""
                if a.status is not None and b.status is not None and a.status is not b.status:
                    try:
                        found = bisect(repo, ps, patch, since, head)
                        first = found.first
                        note = "" if first else f"one of {len(found.candidates)} commits (others skipped)"
                    except PatchctlError as exc:  # the report still says that the outcome changed
                        note = str(exc)
                out.append(
                    Watched(
                        patch.id,
                        tuple(paths),
                        history.info(repo, touched) if touched else None,
                        before,
                        after,
                        first,
                        note,
                    )
                )
    return Watch(since_text, base, head_sha, len(chain), tuple(out), tuple(chain))
