"""One way to name a verl tree and get it on disk.

A spec is one of four things: a directory, a source release (``verl==X.Y.Z``), a git ref of a
checkout, or a name from ``patchctl.toml [targets]``. :func:`parse` decides which (and checks
that it exists) before anything is unpacked; :func:`materialize` puts it on disk: in place for
a directory or the cached release tree that ``apply`` patches, or as a pristine copy under a
scratch folder (an sdist unpacked fresh, a commit's blobs as git stores them) for ``capture``'s BASE and
``matrix``'s columns, which must never read a tree a user has patched.
"""

from __future__ import annotations

import enum
import re
from pathlib import Path

from patchctl import releases
from patchctl.errors import BadRef, PatchctlError
from patchctl.records import record


class Kind(str, enum.Enum):
    PATH = "path"
    RELEASE = "release"
    REF = "ref"


@record(frozen=True)
class TreeSpec:
    """A parsed spec: what the user typed and where its tree comes from."""

    #: as typed, for messages and labels
    text: str
    kind: Kind
    #: the directory, for PATH
    path: Path | None = None
    #: the version, for RELEASE
    release: str | None = None
    #: the checkout and the commit the ref named when parsed, for REF
    repo: Path | None = None
    commit: str | None = None

    @property
    def label(self) -> str:
        return f"{self.text} ({self.commit[:12]})" if self.kind is Kind.REF and self.commit else self.text


class UnknownRef(PatchctlError):
    def __init__(self, option: str, ref: str, repo: Path, fix: str) -> None:
        self.option, self.ref, self.repo = option, ref, repo
        super().__init__(f"{option} {ref}: no such commit, branch or tag in {repo}; {fix}")


class NoRepository(PatchctlError):
    """A spec that could only be a ref, where there is no repository to look it up in."""

    def __init__(self, option: str, spec: str, repo: Path) -> None:
        self.option, self.spec, self.repo = option, spec, repo
        super().__init__(
            f"{option} {spec}: not a directory, not verl==X.Y.Z, and {repo} is not a git "
            "repository to look the ref up in"
        )


def release(text: str) -> TreeSpec | None:
    version = releases.parse_spec(text)
    return TreeSpec(text, Kind.RELEASE, release=version) if version else None


#: ``0.6.1``, ``v0.6.1``: a bare version, as ``matrix --versions`` reads one and as git tags name them
_BARE_VERSION = re.compile(r"^v?(?P<version>\d+(\.\d+)+([a-z]+\d*)?(\.post\d+)?)$")
#: ``verl=0.6.1``, ``verl 0.6.1``, ``verl-0.6.1``, ``verl@0.6.1``: a release meant, mistyped
_NEAR_RELEASE = re.compile(r"^verl\s*(=|===|@|-|\s)\s*v?(?P<version>\d+(\.\d+)+\S*)$")


def bare_release(text: str) -> TreeSpec | None:
    """``0.6.1`` or ``v0.6.1`` as the release ``verl==0.6.1``.

    Asked only after a directory and a ``[targets]`` name of that spelling: a folder called
    ``0.6.1`` in the current directory is still that folder, as git takes a path over a ref.
    """
    m = _BARE_VERSION.match(text.strip())
    return release(f"verl=={m.group('version')}") if m else None


def near_release(text: str) -> str | None:
    """The release spec a mistyped one meant (``verl=0.6.1`` -> ``verl==0.6.1``), else None."""
    m = _NEAR_RELEASE.match(text.strip())
    return f"verl=={m.group('version')}" if m else None


def directory(text: str) -> TreeSpec | None:
    path = Path(text).expanduser()
    return TreeSpec(text, Kind.PATH, path=path) if path.is_dir() else None


def ref(text: str, repo: Path, *, option: str, fix: str) -> TreeSpec:
    """A git ref of ``repo``, resolved to its commit now so a bad one fails before any work."""
    if text.startswith("-"):
        raise BadRef(option, text)
    from patchctl import git  # here, as in the two below: a path or release target runs no git

    commit = git.commit_of(repo, text)
    if commit is None:
        raise UnknownRef(option, text, repo, fix)
    return TreeSpec(text, Kind.REF, repo=repo, commit=commit)


def parse(
    text: str,
    *,
    repo: Path | None = None,
    option: str = "--target",
    ref_fix: str = "check `git tag` or pass a directory or verl==X.Y.Z",
) -> TreeSpec | None:
    """A release, else a directory, else (with ``repo``) a ref; None when it is none of them.

    Names from ``[targets]`` are the config's business (:mod:`patchctl.target`), which resolves
    them to one of these before calling here.
    """
    found = release(text) or directory(text)
    if found is not None or repo is None:
        return found
    from patchctl import git

    if git.toplevel(repo) is None:
        raise NoRepository(option, text, repo)
    return ref(text, repo, option=option, fix=ref_fix)


def materialize(spec: TreeSpec, scratch: Path | None = None) -> Path:
    """The spec's tree on disk; with ``scratch`` (an empty folder to create) a pristine copy.

    Without ``scratch`` a release is the cache's working tree, the one ``apply --target
    verl==X`` patches in place; a ref always needs ``scratch``.
    """
    if spec.kind is Kind.PATH:
        assert spec.path is not None
        return spec.path.resolve()
    if spec.kind is Kind.RELEASE:
        assert spec.release is not None
        return releases.pristine(spec.release, scratch) if scratch is not None else releases.materialize(spec.release)
    assert spec.repo is not None and spec.commit is not None and scratch is not None
    scratch.mkdir(parents=True, exist_ok=True)
    from patchctl import git

    return git.export(spec.repo, spec.commit, scratch / "tree")
