"""What an edit uses from elsewhere, read from the fork's whole file with libcst's qualified names.

An edit's text alone cannot say what ``helper`` or ``a.helper`` is: the import that binds it may
sit anywhere in the file, or be relative. libcst's :class:`FullyQualifiedNameProvider` resolves
each name and attribute through the file's imports (``from verl.utils import a`` makes
``a.helper`` ``verl.utils.a.helper``). A method is resolved only where the object's class is
certain: ``self.x.run()`` when every ``self.x = ...`` in the class is a call of one class,
``Foo(...).run()``, and ``self.run()`` in a class of one base that does not define ``run``.
Config reads are kept as chains of names (``self.config.trainer.get("k")`` is
``self, config, trainer, k``) for :mod:`patchctl.capture.crossfile` to match against new keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as m
from libcst.helpers import get_absolute_module_from_package_for_import, get_full_name_for_node
from libcst.helpers.module import ModuleNameAndPackage
from libcst.metadata import FullyQualifiedNameProvider, MetadataWrapper, PositionProvider


@dataclass
class Uses:
    #: fully qualified names the edit uses, its imports included
    names: set[str] = field(default_factory=set)
    #: chains of names and string keys it reads (``config, trainer, k``)
    chains: set[tuple[str, ...]] = field(default_factory=set)


def uses(rel: str, text: str, spans: Mapping[str, frozenset[int] | None]) -> dict[str, Uses]:
    """For each patch id, what its lines in ``spans`` use (None: every line, a new file)."""
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError:
        return {}
    parts = rel[: -len(".py")].split("/")
    package = ".".join(parts[:-1])
    name = package if parts[-1] == "__init__" else ".".join(parts)
    wrapper = MetadataWrapper(module, cache={FullyQualifiedNameProvider: ModuleNameAndPackage(name, package)})
    reader = _Reader(spans, package)
    wrapper.visit(reader)
    return reader.out


def _chain(node: cst.BaseExpression) -> tuple[str, ...] | None:
    """``a.b["c"].get("d")`` as ``a, b, c, d``; None for anything else."""
    if isinstance(node, cst.Name):
        return (node.value,)
    if isinstance(node, cst.Attribute):
        head = _chain(node.value)
        return (*head, node.attr.value) if head else None
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        key = (
            index.value.evaluated_value
            if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString)
            else None
        )
        head = _chain(node.value)
        return (*head, key) if head and isinstance(key, str) else None
    if m.matches(node, m.Call(func=m.Attribute(attr=m.Name("get")), args=[m.Arg(m.SimpleString()), m.ZeroOrMore()])):
        head = _chain(node.func.value)  # type: ignore[attr-defined] # matched above: a call of an attribute
        key = node.args[0].value.evaluated_value  # type: ignore[attr-defined] # matched above: a string
        return (*head, key) if head and isinstance(key, str) else None
    return None


@dataclass(frozen=True)
class _Class:
    #: the one base's qualified name, when the class has exactly one
    base: str | None
    #: names the class itself defines or assigns to ``self``
    own: frozenset[str]
    #: ``self.x`` -> the class every assignment to it calls (absent when not certain)
    types: dict[str, str]


class _Reader(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider, FullyQualifiedNameProvider)

    def __init__(self, spans: Mapping[str, frozenset[int] | None], package: str) -> None:
        super().__init__()
        self.spans = spans
        self.package = package
        self.out: dict[str, Uses] = {}
        self.classes: list[_Class] = []

    def _ids(self, node: cst.CSTNode) -> list[str]:
        line = self.get_metadata(PositionProvider, node).start.line
        return [pid for pid, lines in self.spans.items() if lines is None or line in lines]

    def _one(self, node: cst.CSTNode) -> str | None:
        found = self.get_metadata(FullyQualifiedNameProvider, node, set())
        return next(iter(found)).name if len(found) == 1 else None

    def _add(self, node: cst.CSTNode, names: list[str | None], chain: tuple[str, ...] | None = None) -> None:
        for pid in self._ids(node):
            mine = self.out.setdefault(pid, Uses())
            mine.names.update(n for n in names if n)
            if chain and len(chain) > 1:
                mine.chains.add(chain)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        bases = [self._one(b.value) for b in node.bases]
        own: set[str] = set()
        seen: dict[str, set[str | None]] = {}
        for found in m.findall(node.body, m.FunctionDef() | m.ClassDef() | m.Assign() | m.AnnAssign() | m.AugAssign()):
            if isinstance(found, (cst.FunctionDef, cst.ClassDef)):
                own.add(found.name.value)
                continue
            value = getattr(found, "value", None)
            called = self._one(value.func) if isinstance(found, cst.Assign) and isinstance(value, cst.Call) else None
            if isinstance(found, cst.Assign):
                targets = [t.target for t in found.targets]
            elif isinstance(found, (cst.AnnAssign, cst.AugAssign)):
                targets = [found.target]
            for t in targets:
                if isinstance(t, cst.Name):
                    own.add(t.value)
                elif isinstance(t, cst.Attribute) and m.matches(t.value, m.Name("self")):
                    seen.setdefault(t.attr.value, set()).add(called)
        types = {a: c for a, (c,) in ((a, cs) for a, cs in seen.items() if len(cs) == 1) if c is not None}
        self.classes.append(_Class(bases[0] if len(bases) == 1 else None, frozenset(own | set(seen)), types))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.classes.pop()

    def visit_Name(self, node: cst.Name) -> None:
        self._add(node, [self._one(node)])

    def visit_Attribute(self, node: cst.Attribute) -> None:
        names = [self._one(node)]
        attr, value = node.attr.value, node.value
        cls = self.classes[-1] if self.classes else None
        if cls and m.matches(value, m.Attribute(value=m.Name("self"))):
            owner = cls.types.get(value.attr.value)  # type: ignore[attr-defined] # matched: self.x
            names.append(f"{owner}.{attr}" if owner else None)
        elif cls and cls.base and m.matches(value, m.Name("self")) and attr not in cls.own:
            names.append(f"{cls.base}.{attr}")
        elif isinstance(value, cst.Call) and (made := self._one(value.func)):
            names.append(f"{made}.{attr}")
        self._add(node, names, _chain(node))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self._add(node, [], _chain(node))

    def visit_Call(self, node: cst.Call) -> None:
        self._add(node, [], _chain(node))

    def visit_Import(self, node: cst.Import) -> None:
        self._add(node, [get_full_name_for_node(a.name) for a in node.names])

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = get_absolute_module_from_package_for_import(self.package or None, node)
        if module is None or isinstance(node.names, cst.ImportStar):
            return
        self._add(node, [module, *(f"{module}.{get_full_name_for_node(a.name)}" for a in node.names)])
