"""``retire``: a new patchset without the patches upstream absorbed, each with a record of why.

A patch is retired when it is ``superseded-upstream`` on the target. With ``--repo`` and
``--since`` (a ref where the patches were still needed) each retired patch is bisected, and its
record names the upstream commit that absorbed it and the first release tag holding that
commit. The patch's own metadata (``applied_upstream``, ``drop_when``) is checked against what
was found, and every disagreement is reported; so is a patch whose ``drop_when`` says to drop it
on the target while upstream does not have it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from patchctl import git
from patchctl.drift.bisect import bisect
from patchctl.drift.history import Commit
from patchctl.drift.refs import resolve
from patchctl.drift.sides import Side
from patchctl.patchsets.model import Outcome, Patch, PatchResult, Patchset


@dataclass(frozen=True)
class Retired:
    patch: str
    title: str
    #: the reason the target gave for superseded-upstream
    reason: str
    #: the commit that absorbed it, when bisected
    absorbed_by: Commit | None
    #: the first release tag holding that commit (``v0.7.0``)
    release: str | None
    applied_upstream: str | None
    drop_when: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "patch": self.patch,
            "title": self.title,
            "reason": self.reason,
            "absorbed_by": self.absorbed_by.to_json() if self.absorbed_by else None,
            "release": self.release,
            "applied_upstream": self.applied_upstream,
            "drop_when": self.drop_when,
        }


def release_of(repo: Path, sha: str) -> str | None:
    """The oldest ``vX.Y.Z`` tag whose history holds ``sha``: the release that shipped it."""
    tags = git.run(repo, "tag", "--contains", sha, "--list", "v*").stdout.split()
    versions = []
    for tag in tags:
        try:
            versions.append((Version(tag.lstrip("v")), tag))
        except InvalidVersion:
            continue
    return min(versions)[1] if versions else None


def absorbed(
    repo: Path | None, since: str | None, side: Side, patchset: Patchset, patch: Patch, result: PatchResult
) -> Retired:
    """The record of one retired patch; bisected when there is history to bisect."""
    commit = rel = None
    bad = _commit_of(repo, side) if repo is not None else None
    if repo is not None and since is not None and bad is not None:
        found = bisect(repo, patchset, patch, resolve(repo, "--since", since), bad)
        commit = found.first
        rel = release_of(repo, commit.sha) if commit else None
    return Retired(
        patch.id,
        patch.title,
        result.reason,
        commit,
        rel,
        patch.meta.get("applied_upstream"),
        patch.meta.get("drop_when"),
    )


def _commit_of(repo: Path, side: Side) -> tuple[str, str] | None:
    """The target's commit: the ref's own, or for a release the tag ``vX.Y.Z`` of ``repo``."""
    if side.commit is not None:
        return side.label, side.commit
    tag = f"v{side.target.version}" if side.target.version else None
    sha = git.commit_of(repo, tag) if tag else None
    return (tag, sha) if tag and sha else None


def _contains(spec: str | None, version: str | None) -> bool | None:
    if not spec or not version:
        return None
    try:
        return Version(version) in SpecifierSet(spec, prereleases=True)
    except (InvalidVersion, InvalidSpecifier):
        return None


def disagreements(retired: list[Retired], kept: list[tuple[Patch, PatchResult]], version: str | None) -> list[str]:
    """Where the metadata and what bisect (or the target) found disagree, one sentence each."""
    out = []
    for r in retired:
        found = r.release.lstrip("v") if r.release else None
        if found and r.applied_upstream and Version(found) != _version(r.applied_upstream):
            out.append(
                f"{r.patch}: applied_upstream = {r.applied_upstream!r}, but bisect found it absorbed by "
                f"{r.absorbed_by.sha[:12] if r.absorbed_by else '?'}, first released in {r.release}"
            )
        if found and _contains(r.drop_when, found) is False:
            out.append(f"{r.patch}: drop_when = {r.drop_when!r} excludes {found}, the first release that has it")
        if _contains(r.drop_when, version) is False:
            out.append(f"{r.patch}: superseded upstream on verl {version}, but drop_when = {r.drop_when!r} excludes it")
        if not r.drop_when and not r.applied_upstream:
            out.append(f"{r.patch}: superseded upstream, and it has neither applied_upstream nor drop_when")
    for patch, result in kept:
        if _contains(patch.meta.get("drop_when"), version) and result.status is not Outcome.SUPERSEDED_UPSTREAM:
            out.append(
                f"{patch.id}: drop_when = {patch.meta['drop_when']!r} says drop it on verl {version}, "
                f"but upstream does not have it there ({result.status.value})"
            )
    return out


def _version(text: str) -> Version | None:
    try:
        return Version(text.lstrip("v"))
    except InvalidVersion:
        return None


def without(manifest_text: str, ids: set[str]) -> str:
    """The manifest with the ``[[patch]]`` tables of ``ids`` cut out, everything else as written."""
    parts = re.split(r"(?m)^(?=\[\[patch\]\]\s*$)", manifest_text)
    kept = [parts[0]]
    for part in parts[1:]:
        m = re.search(r'(?m)^id\s*=\s*"([^"]*)"', part)
        if m is None or m.group(1) not in ids:
            kept.append(part)
    return "".join(kept)


def record(retired: list[Retired], target: str, problems: list[str]) -> str:
    """``retired.json``: what was retired from the patchset, on which target, and why."""
    return (
        json.dumps({"target": target, "retired": [r.to_json() for r in retired], "disagreements": problems}, indent=2)
        + "\n"
    )
