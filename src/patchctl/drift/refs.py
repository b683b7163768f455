"""``--repo`` and the refs and patch ids the drift commands take, checked before any work."""

from __future__ import annotations

from pathlib import Path

from patchctl import git
from patchctl.drift.errors import NoSuchPatch, NotARepository, UnknownRef
from patchctl.errors import BadRef, ToolMissing
from patchctl.patchsets.model import Patch, Patchset


def open_repo(path: Path) -> Path:
    """A work tree's root, or a bare repository (a mirror of upstream has no work tree)."""
    try:
        done = git.run(path, "rev-parse", "--absolute-git-dir", check=False)
    except ToolMissing:
        raise NotARepository(path) from None
    if not path.is_dir() or done.returncode != 0:
        raise NotARepository(path)
    return (git.toplevel(path) or path).resolve()


def resolve(repo: Path, option: str, text: str) -> tuple[str, str]:
    """(as typed, its commit); a ref starting with ``-`` is refused before git sees it."""
    if text.startswith("-"):
        raise BadRef(option, text)
    sha = git.commit_of(repo, text)
    if sha is None:
        raise UnknownRef(option, text, repo)
    return text, sha


def find_patch(patchsets: list[Patchset], patch_id: str) -> tuple[Patchset, Patch]:
    """``ID`` or ``PATCHSET/ID``."""
    for ps in patchsets:
        for p in ps.patches:
            if patch_id in (p.id, f"{ps.name}/{p.id}"):
                return ps, p
    raise NoSuchPatch(patch_id, [p.id for ps in patchsets for p in ps.patches])
