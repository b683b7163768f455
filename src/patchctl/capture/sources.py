"""FORK and BASE as directories of files, whatever the user named them by.

BASE may be a directory, ``verl==X.Y.Z`` (the release's sdist, unpacked fresh, because the
cached working tree may carry a user's patches), or a git ref of FORK's repository (exported
with its blobs as git stores them, so FORK's working tree and index are never touched). Only
regular files inside each tree are read (:mod:`patchctl.capture.walk`).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from patchctl import git, trees
from patchctl.capture.base import describe, repository
from patchctl.capture.walk import Walk, judged, walk
from patchctl.errors import BadOptionValue
from patchctl.tags import SKIP_DIRS
from patchctl.target import read_version


@dataclass(frozen=True)
class Tree:
    root: Path
    #: how the user named it, for messages and the manifest
    label: str
    version: str | None
    #: relative POSIX paths of the files that belong to the tree
    files: frozenset[str]
    #: a directory given as BASE, named by what it holds (see :func:`identity`)
    described: str | None = None
    #: (path, why) for each name the tree lists that is not read: a symlink leading out, a FIFO...
    skipped: tuple[tuple[str, str], ...] = ()


def identity(root: Path, spec: str, files: frozenset[str]) -> str:
    """A directory named by its commit, or by a hash of its content where no clean commit says it.

    Its ``verl/version/version`` is no name for it: a checkout between releases, or one a user
    edited, still reads as the last release (issue 27).
    """
    if git.is_worktree_root(root):
        head = git.head(root)
        if head and not git.status_porcelain(root):
            return f"{spec} at commit {head[:12]}"
    digest = hashlib.sha256()
    for rel in sorted(files):
        path = root / rel
        data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
        digest.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
    return f"{spec}, content sha256:{digest.hexdigest()[:16]}"


def list_files(root: Path) -> Walk:
    """The files of a tree as git sees it (tracked plus untracked not ignored), else by walking;
    each judged before it is read (:func:`~patchctl.capture.walk.judge`).

    Git's answer matters for a fork: build outputs and checkpoints it ignores are not edits.
    """
    if git.is_worktree_root(root):
        return judged(root, _kept(list(git.worktree_files(root))))
    return walk(root)


def _kept(names: list[str]) -> list[str]:
    return [n for n in names if n and not set(Path(n).parts[:-1]) & SKIP_DIRS]


#: ignored files larger than this are not read: build outputs and checkpoints, not a fork's edits
IGNORED_READ_LIMIT = 1 << 20


@dataclass(frozen=True)
class Ignored:
    """What git ignores in a fork's work tree that capture must not pass over unseen."""

    #: tagged files git ignores -> the rule that ignores each, as ``.gitignore:3: tmp/``
    tagged: dict[str, str]
    #: ignored files over :data:`IGNORED_READ_LIMIT`, not searched for the tag
    unread: list[str]


def ignored_tagged(root: Path, rx: re.Pattern[str]) -> Ignored:
    """The untracked files git ignores under ``root`` that carry the tag (none outside git).

    :func:`list_files` leaves ignored files out of the tree, but a tagged one is the user's edit
    all the same (verl's ``.gitignore`` has ``lib/``, ``outputs`` and ``tmp/``).
    """
    if not git.is_worktree_root(root):
        return Ignored({}, [])
    unread, tagged = [], []
    for rel in sorted(_kept(git.ignored_files(root))):
        path = root / rel
        if not path.is_file() or path.is_symlink():
            continue
        if path.stat().st_size > IGNORED_READ_LIMIT:
            unread.append(rel)
        elif rx.search(path.read_bytes().decode("utf-8", errors="replace")):
            tagged.append(rel)
    return Ignored(_ignore_rules(root, tagged), unread)


def _ignore_rules(root: Path, names: list[str]) -> dict[str, str]:
    """Each of ``names`` -> the rule that makes git ignore it (``git check-ignore -v``)."""
    rules = git.ignore_rules(root, names)
    return {name: rules.get(name, "an ignore rule") for name in names}


def open_fork(path: Path) -> Tree:
    if not path.is_dir():
        raise BadOptionValue("--from", str(path), "not a directory; pass the fork's checkout")
    found = list_files(path.resolve())
    return Tree(path.resolve(), str(path), read_version(path), found.files, skipped=found.skipped)


def base_dir(spec: str) -> Path | None:
    """The directory ``--base`` names, None for a release or a ref (read as :func:`open_base` reads it)."""
    found = None if trees.release(spec) else trees.directory(spec)
    return found.path if found is not None else None


def compared(fork: Tree, base: Tree) -> tuple[Tree, Tree, tuple[str, ...]]:
    """FORK and BASE less each other's skipped paths, and a note per skipped path.

    A path one side does not read is not compared at all: were it dropped from that side only,
    BASE's file would read as deleted by FORK, or FORK's as new.
    """
    notes = tuple(
        f"{rel}: in {side} it {why}; skipped, not read"
        for side, tree in (("FORK", fork), ("BASE", base))
        for rel, why in tree.skipped
    )
    fork_out, base_out = {rel for rel, _ in fork.skipped}, {rel for rel, _ in base.skipped}
    return replace(fork, files=fork.files - base_out), replace(base, files=base.files - fork_out), notes


def open_base(spec: str, fork: Path, scratch: Path, repo: Path | None = None) -> Tree:
    """Resolve ``--base`` into a directory; a release or git ref (of ``repo``, else of FORK's
    repository) is exported under ``scratch``. A ref is named by its commit, date and nearest
    release (:func:`~patchctl.capture.base.describe`), never by the version file it holds."""
    found: trees.TreeSpec | None
    if repo is not None:  # a clone of upstream, bare (a mirror) or not
        fix = "check `git -C REPO tag` or pass a directory or verl==X.Y.Z"
        found = (
            trees.release(spec) or trees.directory(spec) or trees.ref(spec, repository(repo), option="--base", fix=fix)
        )
    else:
        fix = "check `git -C FORK tag` or pass a directory or verl==X.Y.Z"
        found = trees.parse(spec, repo=fork, option="--base", ref_fix=fix)
    if found is None:  # pragma: no cover - parse raises for a spec that is no ref either
        raise BadOptionValue("--base", spec, "not a directory, a release or a ref")
    if found.kind is trees.Kind.PATH:
        root = trees.materialize(found)
        listed = list_files(root)
        return Tree(root, spec, read_version(root), listed.files, identity(root, spec, listed.files), listed.skipped)
    root = trees.materialize(found, scratch / "base")
    listed = list_files(root)
    version = found.release or read_version(root)
    described = describe(found.repo, found.commit, version) if found.repo is not None and found.commit else None
    return Tree(root, found.label, version, listed.files, described, listed.skipped)
