"""Where code went in the other tree: a definition by name anywhere in it, a file's new path.

A function that left its file, or a callee defined three modules away, is found by scanning
the tree's Python files for ``def NAME``/``class NAME`` as text first, and parsing only the
files that hold it (a verl tree has ~1,000 Python files; parsing them all costs seconds).
"""

from __future__ import annotations

import ast
import difflib
from pathlib import Path

from patchctl.drift import history, regions
from patchctl.drift.sides import Side

#: (file, qualified name, node, the file's text)
Found = tuple[str, str, ast.AST, str]
#: how alike two files must be for one to count as the other renamed (git's default is 50 %)
SIMILAR = 0.5


class Finder:
    """Definitions in one tree, by name; each name looked up once."""

    def __init__(self, side: Side) -> None:
        self.side = side
        self._files: list[str] | None = None
        self._seen: dict[tuple[str, str | None], Found | None] = {}

    def files(self) -> list[str]:
        """Python files of the tree, the package first (a test helper of the same name comes last)."""
        if self._files is None:
            root = self.side.target.root
            found = [
                p.relative_to(root).as_posix()
                for p in root.rglob("*.py")
                if p.is_file()
                and not p.is_symlink()
                and not any(part.startswith(".") for part in p.relative_to(root).parts)
            ]
            self._files = sorted(found, key=lambda rel: (not rel.startswith("verl/"), rel))
        return self._files

    def definition(self, name: str, owner: str | None) -> Found | None:
        """The first definition called ``name`` (in class ``owner`` when that is a class name)."""
        key = (name, owner)
        if key not in self._seen:
            self._seen[key] = self._search(name, owner)
        return self._seen[key]

    def moved(self, scope: str, near: str | None) -> Found | None:
        """Where definition ``scope`` of the other tree is in this one: under the same qualified
        name in another file, else under the same last name in ``near`` (the file it was in: a
        class renamed or merged, as verl 0.9.1's vLLMHttpServerBase.run_server)."""
        name, owner = scope.rsplit(".", 1)[-1], scope.rsplit(".", 2)[-2] if "." in scope else None
        found = self.definition(name, owner)
        text = self.side.read(near) if near and found is None else None
        tree = regions.parse(text)
        if tree is None or text is None:
            return found
        qual = next((q for q in regions.definitions(tree) if q.rsplit(".", 1)[-1] == name), None)
        return (near, qual, regions.definitions(tree)[qual], text) if near and qual else None

    def _search(self, name: str, owner: str | None) -> Found | None:
        needles = (f"def {name}(", f"class {name}(", f"class {name}:")
        callee = f"{owner}.{name}" if owner else name
        for rel in self.files():
            text = self.side.read(rel)
            if text is None or not any(n in text for n in needles):
                continue
            tree = regions.parse(text)
            qual = regions.find_callee(tree, callee) if tree is not None else None
            if tree is not None and qual is not None:
                return rel, qual, regions.definitions(tree)[qual], text
        return None


def renamed_to(a: Side, b: Side, rel: str) -> str | None:
    """Where file ``rel`` of ``a`` is in ``b``: git's rename detection between two refs of one
    repository, else the most similar new file of the same name or folder; None when deleted."""
    if a.repo is not None and a.repo == b.repo and a.commit and b.commit:
        for new, old in history.changed_paths(a.repo, a.commit, b.commit, []).items():
            if old == rel and new != rel:
                return new
    return _similar(a, b, rel)


def _similar(a: Side, b: Side, rel: str) -> str | None:
    """A new file of ``b`` with the same name or in the same folder, at least SIMILAR alike.

    Releases have no history to ask; and git's own detection compares whole files, so a module
    split in two (verl 0.7.0's vllm_rollout_spmd.py) reads there as deleted."""
    text = a.read(rel) or ""
    name, folder = Path(rel).name, str(Path(rel).parent)
    root_a, root_b = a.target.root, b.target.root
    fresh = [p.relative_to(root_b).as_posix() for p in root_b.rglob(name)] + [
        p.relative_to(root_b).as_posix() for p in (root_b / folder).glob("*.py")
    ]
    best, score = None, SIMILAR
    for cand in dict.fromkeys(fresh):
        if (root_a / cand).exists():
            continue
        ratio = difflib.SequenceMatcher(None, text.splitlines(), (b.read(cand) or "").splitlines()).ratio()
        if ratio >= score:
            best, score = cand, ratio
    return best
