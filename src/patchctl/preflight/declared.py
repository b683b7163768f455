"""What a verl tree declares about its environment, read without running its code.

``setup.py`` is parsed with :mod:`ast`, never executed: its requirement lists are string
literals (``VLLM_REQUIRES = [..., "vllm>=0.8.5,<=0.11.0"]``), so every list of string literals
that parse as requirements is read. ``git_ignore.py`` holds one-line string assignments.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _string_lists(tree: ast.AST) -> list[list[str]]:
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.List, ast.Tuple))
            and node.elts
            and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
        ):
            found.append([e.value for e in node.elts])  # type: ignore[attr-defined] # every element was checked to be a str Constant just above
    return found


def _python_requires(tree: ast.AST) -> str:
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "python_requires" and isinstance(node.value, ast.Constant):
            return str(node.value.value)
    return ""


def _add(found: dict[str, str], line: str) -> None:
    try:
        req = Requirement(line)
    except InvalidRequirement:
        return
    name = canonicalize_name(req.name)
    # keep the declared text ("vllm>=0.8.5,<=0.11.0" stays in that order; str(SpecifierSet) sorts)
    head = line.split(";")[0]
    start = min((head.find(c) for c in "<>=!~" if c in head), default=-1)
    spec = head[start:].replace(" ", "").strip("()") if start >= 0 else ""
    if not found.get(name):
        found[name] = spec or str(req.specifier)


def read_requirements(root: Path) -> tuple[dict[str, str], str]:
    """``{distribution: specifier}`` from the tree's setup.py (else pyproject.toml), and the source.

    ``python`` carries ``python_requires`` / ``requires-python`` when declared.
    """
    found: dict[str, str] = {}
    setup = root / "setup.py"
    if setup.is_file():
        try:
            tree = ast.parse(setup.read_text(encoding="utf-8"), str(setup))
        except SyntaxError:
            tree = None
        if tree is not None:
            for strings in _string_lists(tree):
                for line in strings:
                    _add(found, line)
            if _python_requires(tree):
                found["python"] = _python_requires(tree)
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        except tomllib.TOMLDecodeError:
            project = {}
        lines = list(project.get("dependencies", []))
        for extra in project.get("optional-dependencies", {}).values():
            lines.extend(extra)
        for line in lines:
            if isinstance(line, str):
                _add(found, line)
        if project.get("requires-python") and "python" not in found:
            found["python"] = str(project["requires-python"])
    source = "setup.py" if setup.is_file() else "pyproject.toml" if pyproject.is_file() else ""
    return found, source


def read_settings(path: Path) -> dict[str, str]:
    """The ``NAME = "value"`` assignments of a git_ignore.py (upper-case names, string values)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (OSError, SyntaxError, ValueError):
        return {}
    settings = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id.isupper()
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            settings[node.targets[0].id] = node.value.value
    return settings
