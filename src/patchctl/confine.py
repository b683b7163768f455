"""Keeping every path patchctl acts on inside its tree.

Manifests, the apply record and the recovery journal all name files relative to a tree, and all
of them can be crafted or copied from elsewhere. Each path they give goes through here before it
is read, written or removed: it must be a plain relative path, and, resolved through symlinks,
it must still be inside the tree. This module imports nothing of patchctl but its errors, so the
journal (which :mod:`patchctl.fsutil` builds on) can use it too.
"""

from __future__ import annotations

import os
from pathlib import Path

from patchctl.errors import OutsideTree

#: folders that belong to version control or to patchctl itself: a patch never writes there
#: (a file in ``.git/hooks`` runs on the user's next commit)
METADATA_DIRS = (".git", ".hg", ".svn", ".patchctl", ".patchctl-journal")


def relative_inside(rel: str) -> str | None:
    """Why ``rel`` is not a plain relative path that stays inside a tree, or None when it is.

    A manifest, a record or a journal names files relative to the tree; one that is absolute or
    climbs out with ``..`` would let a patchset or a copied record write or delete elsewhere.
    """
    if not rel or rel.startswith(("/", "\\")) or (len(rel) > 1 and rel[1] == ":"):
        return "is an absolute path"
    if "\\" in rel:
        return "contains a backslash; write it with /"
    if any(part == ".." for part in rel.split("/")):
        return "climbs out of the tree with .."
    if any(part in ("", ".") for part in rel.split("/")):
        return "is not a normalized path (empty or . components)"
    return None


def in_metadata(rel: str) -> str | None:
    """The version-control or patchctl folder ``rel`` is or lies in, or None.

    Compared without case: on a case-insensitive file system (macOS, Windows) ``.Git`` is ``.git``.
    """
    return next((part.lower() for part in rel.split("/") if part.lower() in METADATA_DIRS), None)


def resolve_inside(root: Path, rel: str, *, follow_last: bool = True) -> Path:
    """The real location of ``root/rel``; :class:`OutsideTree` when it is not inside ``root``.

    Symlinks inside the tree are followed (a patched symlink stays a symlink: its target file is
    rewritten), but one that leads out of the tree is refused. ``follow_last=False`` resolves
    only the folders: right for a file that is removed or replaced, where a symlink itself is
    what goes, never its target.
    """
    problem = relative_inside(rel)
    if problem:
        raise OutsideTree(root, rel, problem)
    real_root = root.resolve()
    path = root / rel
    real = path.resolve() if follow_last else path.parent.resolve() / path.name
    if real != real_root and real_root not in real.parents:
        raise OutsideTree(root, rel, f"leads out of the tree through a symlink (to {real})")
    return real


def why_outside(root: Path, rel: str, *, follow_last: bool = True) -> str | None:
    """Why :func:`resolve_inside` refuses ``rel`` ("climbs out of the tree with ..."), or None."""
    try:
        resolve_inside(root, rel, follow_last=follow_last)
    except OutsideTree as exc:
        return exc.problem
    return None


def resolve_target(root: Path, rel: str) -> Path:
    """Like :func:`resolve_inside`, and the real file is not in ``.git`` or patchctl's folders
    either: a symlink in the tree must not carry a patch into ``.git/hooks``."""
    real = resolve_inside(root, rel)
    inner = real.relative_to(root.resolve()).as_posix()
    folder = in_metadata(inner)
    if folder is not None:
        raise OutsideTree(root, rel, f"leads into {folder} through a symlink (to {real})")
    return real


def not_a_real_folder(path: Path) -> str | None:
    """Why ``path`` is not a real folder (a symlink, a file), or None when it is one or is absent.

    patchctl's own folders in a tree hold state it acts on; a symlink there would carry its
    reads and deletions wherever the link points.
    """
    if path.is_symlink():
        return f"{path.name} is a symbolic link (to {os.readlink(path)})"
    if os.path.lexists(path) and not path.is_dir():
        return f"{path.name} is not a folder"
    return None
