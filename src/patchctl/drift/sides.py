"""The two trees ``drift`` compares: each a release, a git ref of ``--repo``, or a directory.

Releases and refs are unpacked pristine into scratch (:func:`patchctl.trees.materialize`, the
way ``matrix`` unpacks its columns), so a release the user patched in place is never what is
compared; a directory is read where it is and never written.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from patchctl import trees
from patchctl.confine import why_outside
from patchctl.drift.refs import resolve
from patchctl.errors import PatchctlError
from patchctl.target import Target, open_tree


class NotATree(PatchctlError):
    def __init__(self, option: str, text: str) -> None:
        super().__init__(
            f"{option} {text}: not a release (X.Y.Z or verl==X.Y.Z) and not a directory; "
            "to name a git ref, pass --repo PATH"
        )


@dataclass(frozen=True)
class Side:
    """One end of the comparison, on disk."""

    label: str
    target: Target
    #: the repository and commit, for a ref (renames are then taken from git)
    repo: Path | None = None
    commit: str | None = None

    def read(self, rel: str) -> str | None:
        """A file's text; None when absent, not UTF-8, a symlink, or reached through one leading out."""
        path = self.target.root / rel
        if why_outside(self.target.root, rel) or path.is_symlink() or not path.is_file():
            return None
        try:
            return path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            return None

    def listdir(self, rel: str) -> list[str]:
        """Regular files directly in folder ``rel`` ("" for the root), as tree paths."""
        folder = self.target.root / rel if rel else self.target.root
        if (rel and why_outside(self.target.root, rel)) or not folder.is_dir() or folder.is_symlink():
            return []
        return sorted(
            f"{rel}/{p.name}" if rel else p.name for p in folder.iterdir() if p.is_file() and not p.is_symlink()
        )


def spec(text: str, repo: Path | None, option: str) -> trees.TreeSpec:
    """As ``matrix`` reads ``--versions``: with ``--repo`` a bare ``0.6.1`` is a ref (write
    ``verl==0.6.1`` for the release); without it, a release. A directory is a directory."""
    found = trees.release(text) or trees.directory(text)
    if found is None and repo is None:
        found = trees.release("verl==" + text)
    if found is not None:
        return found
    if repo is None:
        raise NotATree(option, text)
    _, sha = resolve(repo, option, text)
    return trees.TreeSpec(text, trees.Kind.REF, repo=repo, commit=sha)


def open_side(found: trees.TreeSpec, scratch: Path) -> Side:
    root = trees.materialize(found, scratch if found.kind is not trees.Kind.PATH else None)
    target = dataclasses.replace(open_tree(root, found.text), commit=found.commit)
    return Side(found.text, target, found.repo, found.commit)
