"""Turning ``--target`` into a verl tree on disk: a path, a release spec, or a configured name."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from patchctl import trees
from patchctl.errors import NoSuchPath, NotAVerlTree, UnknownTarget
from patchctl.records import record


@record(frozen=True)
class Target:
    #: the tree's root directory
    root: Path
    #: verl's version as the tree declares it (verl/version/version), if readable
    version: str | None
    #: what the user typed, for messages
    label: str
    #: HEAD of the tree's git repository, None when it is not one
    commit: str | None
    #: True when the tree's root is a git work tree root
    is_git: bool

    @classmethod
    def on_disk(cls, root: Path, version: str | None, label: str) -> Target:
        """A tree whose git facts (``is_git``, ``commit``) are read from it when first asked for.

        They take a git process (~5-10 ms with its fork), and ``verify`` and ``migrate`` never ask:
        verify is measured against ``grep -rn`` (issue 39), and migrate asks git about the tree
        itself, on a thread of its own. ``dataclasses.replace`` and ``==`` read them as any field.
        """
        target = cls.__new__(cls)
        for name, value in (("root", root), ("version", version), ("label", label)):
            object.__setattr__(target, name, value)
        return target

    if not TYPE_CHECKING:  # for mypy every field is set: a typo stays an error

        def __getattr__(self, name: str) -> object:
            """Only for a field :meth:`on_disk` left unread (Python asks here for no other)."""
            if name not in ("is_git", "commit"):
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            from patchctl import git  # here: git and its subprocess machinery, for a command that asks

            top, head = git.top_and_head(self.root)  # both at once: who asks for one asks for the other
            is_git = top is not None and top.resolve() == self.root.resolve()
            object.__setattr__(self, "is_git", is_git)
            object.__setattr__(self, "commit", head if is_git else None)
            return getattr(self, name)


def read_version(root: Path) -> str | None:
    f = root / "verl" / "version" / "version"
    try:
        return f.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def open_tree(root: Path, label: str | None = None) -> Target:
    root = root.resolve()
    if not (root / "verl" / "__init__.py").is_file():
        raise NotAVerlTree(root)
    return Target.on_disk(root, read_version(root), label or str(root))


def find_root(start: Path) -> Path | None:
    """The verl tree holding ``start``: the nearest of it and its parents with ``verl/__init__.py``.

    As git looks for ``.git``, so that ``patchctl verify`` works from any folder of the tree
    (inside ``verl/utils`` too), not only from its root.
    """
    start = start.resolve()
    return next((d for d in (start, *start.parents) if (d / "verl" / "__init__.py").is_file()), None)


def resolve(spec: str, config: Path | None = None) -> Target:
    """Resolve ``--target``: ``verl==X.Y.Z`` (the cached tree, patched in place), an existing
    directory (or the verl tree around it), or a name from the config's ``[targets]``."""
    found = trees.parse(spec)
    if found is not None and found.kind is trees.Kind.PATH:
        assert found.path is not None
        root = find_root(found.path)
        if root is None:
            raise NotAVerlTree(found.path.resolve(), upward=True)
        return open_tree(root, spec)
    if found is not None:
        return open_tree(trees.materialize(found), spec)
    # here, not at the top: tomllib and the schema, for a target given by name only
    from patchctl.config import load as load_config
    from patchctl.config import search_paths

    loaded = load_config(config)
    configured = loaded.targets.get(spec)
    if configured:
        return resolve(configured)
    bare = trees.bare_release(spec)
    if bare is not None and not Path(spec).expanduser().exists():
        return open_tree(trees.materialize(bare), spec)
    path = Path(spec).expanduser()
    if path.exists():
        raise NotAVerlTree(path)
    if "/" in spec or spec.startswith((".", "~")):
        raise NoSuchPath("--target", path)
    raise UnknownTarget(spec, sorted(loaded.targets), loaded.file, search_paths(), meant=trees.near_release(spec))
