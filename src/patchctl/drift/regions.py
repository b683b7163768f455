"""The upstream code a patch depends on, found in one file's text: scopes, callees, signatures.

Pure functions over source text (``ast`` only), so that ``drift`` can ask the same question of
both trees and compare the answers. A patch depends on:

- the class or function around its anchor (a structural patch's ``scope``; the function
  holding the calls a keyword patch edits);
- for call and keyword patches, the callee's signature, when the callee is defined in the tree;
- the file it edits (compared whole by :mod:`~patchctl.drift.compare`).
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass

from patchctl.patchsets.model import Patch
from patchctl.patchsets.placement.pyparse import calls_to

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
#: lines of a region's diff shown before the rest is counted
DIFF_LINES = 40


def parse(text: str | None) -> ast.Module | None:
    if text is None:
        return None
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def definitions(tree: ast.Module) -> dict[str, ast.AST]:
    """Every class and function by qualified name (``Outer.method``), first definition kept."""
    out: dict[str, ast.AST] = {}

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, _DEFS):
                name = prefix + node.name
                out.setdefault(name, node)
                walk(node.body, name + ".")

    walk(tree.body, "")
    return out


def enclosing(tree: ast.Module, line: int) -> str:
    """The qualified name of the innermost definition holding ``line``; "" for module level."""
    best = ""
    for name, node in definitions(tree).items():
        if node.lineno <= line <= (node.end_lineno or 0) and len(name) > len(best):  # type: ignore[attr-defined] # the nodes walked here are defs and classes, which have line numbers
            best = name
    return best


def anchor_scopes(patch: Patch, tree: ast.Module) -> list[str]:
    """The definitions around a patch's anchor in this file, in source order, without repeats."""
    params = patch.params
    if patch.kind == "structural":
        return [params.scope] if params.scope else []
    scopes: list[str] = []
    for callee in callees(patch):
        for call in calls_to(tree, callee):
            name = enclosing(tree, call.lineno)
            if name and name not in scopes:
                scopes.append(name)
    return scopes


def callees(patch: Patch) -> list[str]:
    """The callees a call or keyword patch edits the calls of, as written (``AsyncLLM.from_vllm_config``)."""
    if patch.kind == "keyword-rename":
        return [patch.params.call]
    if patch.kind == "keyword-value":
        return list(patch.params.calls)
    return []


def source(text: str, node: ast.AST) -> str:
    """A definition's lines, its decorators included."""
    decorators = getattr(node, "decorator_list", None) or []
    first = min([node.lineno, *(d.lineno for d in decorators)])  # type: ignore[attr-defined] # node is a def or class: it has line numbers
    return "".join(text.splitlines(keepends=True)[first - 1 : node.end_lineno])  # type: ignore[attr-defined] # as above


def find_callee(tree: ast.Module, callee: str) -> str | None:
    """The qualified name of ``callee``'s definition in this module, or None.

    Only what the text names is resolved: ``f`` is a module-level function ``f``;
    ``AsyncLLM.from_vllm_config`` a method ``from_vllm_config`` of a class ``AsyncLLM``. A call
    through a variable or an attribute (``self.module.generate``, ``module_class.from_pretrained``)
    names no definition, and guessing one by its last name found unrelated methods in verl.
    """
    parts = callee.split(".")
    defs = definitions(tree)
    if len(parts) == 1:
        return callee if isinstance(defs.get(callee), (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else None
    owner = ".".join(parts[-2:])
    return next(
        (
            q
            for q in defs
            if (q == owner or q.endswith("." + owner)) and isinstance(defs[q], (ast.FunctionDef, ast.AsyncFunctionDef))
        ),
        None,
    )


def header(text: str, node: ast.AST) -> str:
    """A definition's decorators and ``def``/``class`` line(s), up to its body: its signature as written."""
    body = getattr(node, "body", None) or []
    decorators = getattr(node, "decorator_list", None) or []
    first = min([node.lineno, *(d.lineno for d in decorators)])  # type: ignore[attr-defined] # node is a def or class: it has line numbers
    last = body[0].lineno - 1 if body and body[0].lineno > node.lineno else node.lineno  # type: ignore[attr-defined] # as above
    return "".join(text.splitlines(keepends=True)[first - 1 : last])


@dataclass(frozen=True)
class Param:
    name: str
    #: the default's source text, None when it has none
    default: str | None


def signature(node: ast.AST) -> list[Param] | None:
    """A function's parameters in order; a class's ``__init__``'s; None for anything else."""
    if isinstance(node, ast.ClassDef):
        init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        return signature(init) if init is not None else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    out = [Param(p.arg, ast.unparse(d) if d is not None else None) for p, d in zip(positional, defaults, strict=True)]
    if a.vararg:
        out.append(Param("*" + a.vararg.arg, None))
    out += [
        Param(p.arg, ast.unparse(d) if d is not None else None)
        for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
    ]
    if a.kwarg:
        out.append(Param("**" + a.kwarg.arg, None))
    return out


def signature_flags(name: str, old: list[Param] | None, new: list[Param] | None) -> list[str]:
    """The changes of meaning between two signatures: defaults, parameters added, removed, renamed."""
    if old is None or new is None:
        return []
    flags = []
    before = {p.name: p for p in old}
    after = {p.name: p for p in new}
    gone = [p.name for p in old if p.name not in after]
    came = [p.name for p in new if p.name not in before]
    renamed = []
    for g in list(gone):  # a parameter replaced in the same position reads as a rename
        i = [p.name for p in old].index(g)
        if i < len(new) and new[i].name in came:
            renamed.append((g, new[i].name))
            gone.remove(g)
            came.remove(new[i].name)
    flags += [f"parameter renamed: {name}({a} -> {b})" for a, b in renamed]
    flags += [f"parameter removed: {name}({g})" for g in gone]
    flags += [f"parameter added: {name}({c}{'=' + (after[c].default or '') if after[c].default else ''})" for c in came]
    for p in old:
        q = after.get(p.name)
        if q is not None and q.default != p.default:
            flags.append(f"default changed: {name}({p.name}={p.default or '(none)'} -> {q.default or '(none)'})")
    return flags


def trimmed_diff(old: str, new: str, a: str, b: str, limit: int = DIFF_LINES) -> str:
    """A unified diff of at most ``limit`` lines, then how many more there are."""
    lines = list(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), a, b, n=2))
    lines = [line if line.endswith("\n") else line + "\n" for line in lines]
    if len(lines) <= limit:
        return "".join(lines)
    return "".join(lines[:limit]) + f"... ({len(lines) - limit} more diff lines)\n"
