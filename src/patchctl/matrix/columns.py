"""The columns of a matrix: verl source releases and git refs of a local checkout.

Every column's tree is unpacked fresh into scratch: from the release's sdist, or from the blobs
of the ref's commit (:func:`patchctl.git.export`, which runs no filter). Neither reads the cache's
materialized trees (a user may have patched them in place) nor writes into the checkout (``git
worktree add`` would add metadata under its ``.git``).
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from patchctl import git, releases, trees
from patchctl.errors import PatchctlError

#: what --versions help and errors show
SYNTAX = "comma-separated, e.g. --versions 0.6.1,verl==0.7.0 (releases) or --repo PATH --versions v0.6.1,main (refs)"


class BadVersionList(PatchctlError):
    """An entry of ``--versions`` that names nothing patchctl can fetch."""

    def __init__(self, item: str, problem: str, fix: str) -> None:
        self.item = item
        super().__init__(f"--versions {item}: {problem}; {fix}")


class UnknownRef(PatchctlError):
    def __init__(self, repo: Path, ref: str) -> None:
        self.repo, self.ref = repo, ref
        super().__init__(
            f"--versions {ref}: no such commit, branch or tag in {repo}; "
            f"list them with `git -C {repo} tag` and `git -C {repo} branch -a`"
        )


class NotARepository(PatchctlError):
    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(f"--repo {path}: not a git repository; pass the root of a verl git checkout")


class NotAVerlRef(PatchctlError):
    def __init__(self, repo: Path, ref: str, commit: str) -> None:
        self.repo, self.ref = repo, ref
        super().__init__(
            f"--versions {ref}: {repo} at {commit[:12]} is not a verl tree (no verl/__init__.py); "
            "pass refs of a verl checkout"
        )


@dataclass(frozen=True)
class Source:
    """One column: where its pristine tree comes from."""

    #: the column header: the release version (``0.6.1``) or the ref as typed (``v0.6.1``)
    label: str
    #: the verl release version, for a release column
    release: str | None = None
    #: the checkout's work tree root, for a ref column
    repo: Path | None = None
    #: the commit the ref named when the matrix started, for a ref column
    commit: str | None = None

    @property
    def kind(self) -> str:
        return "release" if self.release else "ref"

    @property
    def spec(self) -> trees.TreeSpec:
        if self.release:
            return trees.TreeSpec(self.label, trees.Kind.RELEASE, release=self.release)
        return trees.TreeSpec(self.label, trees.Kind.REF, repo=self.repo, commit=self.commit)


def parse_versions(text: str, repo: Path | None = None, names: Mapping[str, str] | None = None) -> list[Source]:
    """Read ``--versions``: releases (``X.Y.Z`` or ``verl==X.Y.Z``), ``[targets]`` ``names``;
    with ``repo``, git refs.

    With ``repo`` a bare ``0.6.1`` is a ref (a tag may well be called that); write
    ``verl==0.6.1`` for the release. Refs are resolved to commits now, so a bad one stops the
    matrix before anything is unpacked.
    """
    items = [item.strip() for item in text.split(",")]
    if not any(items):
        raise BadVersionList(repr(text), "no versions given", f"list them {SYNTAX}")
    if "" in items:
        raise BadVersionList(text, "has an empty entry", "remove the extra comma")
    top = repo_root(repo) if repo is not None else None
    sources = [
        _named(item, names[item]) if names and item in names and not trees.release(item) else _source(item, top)
        for item in items
    ]
    labels = [s.label for s in sources]
    for label in labels:
        if labels.count(label) > 1:
            raise BadVersionList(label, "is given twice", "list each version once")
    return sources


def repo_root(repo: Path) -> Path:
    top = git.toplevel(repo) if repo.is_dir() else None
    if top is None:
        raise NotARepository(repo)
    return top.resolve()


def _named(name: str, spec: str) -> Source:
    """A ``[targets]`` name: its release, or its checkout's HEAD commit (a matrix patches scratch
    copies only, never a user's tree in place, so a directory is read as its commit holds it)."""
    version = releases.parse_spec(spec)
    if version:
        return Source(name, release=version)
    top = git.toplevel(Path(spec)) if Path(spec).is_dir() else None
    commit = git.head(top) if top is not None else None
    if top is None or commit is None:
        raise BadVersionList(
            name,
            f"names {spec}, which is not a git checkout with a commit",
            "a matrix reads releases and commits: commit that tree, or name a release",
        )
    if not git.has_file_at(top, commit, "verl/__init__.py"):
        raise NotAVerlRef(top, name, commit)
    return Source(name, repo=top.resolve(), commit=commit)


def _source(item: str, repo: Path | None) -> Source:
    spec = trees.release(item) if repo is not None else (trees.release(item) or trees.release("verl==" + item))
    if spec is not None:
        assert spec.release is not None
        return Source(spec.release, release=spec.release)
    if repo is None:
        raise BadVersionList(
            item,
            "not a release version (X.Y.Z or verl==X.Y.Z)",
            "to name git refs of a local checkout, pass --repo PATH",
        )
    if item.startswith("-"):
        raise BadVersionList(item, "a git ref cannot start with '-'", "name a commit, branch or tag")
    try:
        spec = trees.ref(item, repo, option="--versions", fix="")
    except trees.UnknownRef:
        raise UnknownRef(repo, item) from None
    assert spec.commit is not None
    if not git.has_file_at(repo, spec.commit, "verl/__init__.py"):
        raise NotAVerlRef(repo, item, spec.commit)
    return Source(item, repo=repo, commit=spec.commit)


def fetch(sources: list[Source]) -> None:
    """Download the releases not cached yet, side by side (a download spends its time on the network).

    Done before any scratch work so that an unknown release stops the matrix with the index's own
    reason, and the parallel workers only ever read the cache.
    """
    wanted = sorted({s.release for s in sources if s.release})
    if len(wanted) <= 1:
        for version in wanted:
            releases.sdist(version)
        return
    with ThreadPoolExecutor(max_workers=min(4, len(wanted))) as pool:
        for _ in pool.map(releases.sdist, wanted):
            pass


def unpack(source: Source, dest: Path) -> Path:
    """Put the source's pristine tree under the empty directory ``dest``; return its root."""
    return trees.materialize(source.spec, dest)
