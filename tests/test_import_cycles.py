"""No import cycle among patchctl's modules (issue 18.8): every import counts, at the top, inside
a function, or under ``TYPE_CHECKING``, since each is a dependency a reader has to follow."""

from __future__ import annotations

import ast
from pathlib import Path

import patchctl

SRC = Path(patchctl.__file__).parent


def _module(path: Path, src: Path) -> str:
    parts = ["patchctl", *path.relative_to(src).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def graph(src: Path = SRC) -> dict[str, set[str]]:
    """module -> the patchctl modules it imports (``from pkg import mod`` counts as ``pkg.mod``)."""
    mods = {_module(p, src): p for p in src.rglob("*.py") if "builtin" not in p.parts}
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(
                        package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                    )
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            edges[mod].update(n for n in names if n in mods and n != mod and not mod.startswith(n + "."))
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected group of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle() -> None:
    assert cycles(graph()) == []


def test_the_check_sees_a_cycle(tmp_path: Path) -> None:
    """The two cycles issue 18.8 named, as they were: the check must find both."""
    pkg = tmp_path / "migrate"
    pkg.mkdir()
    (tmp_path / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "session.py").write_text("def run():\n    from patchctl.migrate import runner\n")
    (pkg / "runner.py").write_text("from patchctl.migrate.session import Options\n")
    kinds = tmp_path / "kinds"
    kinds.mkdir()
    (kinds / "__init__.py").write_text("")
    (kinds / "places.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from patchctl.kinds.structural import Params\n"
    )
    (kinds / "structural.py").write_text("from patchctl.kinds import places\n")
    assert cycles(graph(tmp_path)) == [
        ["patchctl.kinds.places", "patchctl.kinds.structural"],
        ["patchctl.migrate.runner", "patchctl.migrate.session"],
    ]
