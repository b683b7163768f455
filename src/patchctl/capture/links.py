"""Which captured patches need which: a use needs its definition or import, a call site its callee.

Capture writes these as each patch's ``needs`` so that ``apply`` and ``matrix`` never call a
patch applied while the code it relies on is missing (issue 27: a method applied while its only
call site conflicted, a ``MetricFunc(...)`` use applied while its import conflicted). Only what
the fork *added* counts: names bound or used in a patch's new text and not in its old one.

Within one file, a patch needs another that binds a name it uses (a function, class or import;
an assignment at module level or in the same scope) or defines a method or ``self.`` attribute
it reads. Across files, an import needs the
patch that adds the imported module; :mod:`patchctl.capture.crossfile` adds the other links across
files, resolving names through the fork's whole file. Text that does not parse on its own gives
no links.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, replace

from patchctl.capture.model import Draft


@dataclass(frozen=True)
class Names:
    """Names a piece of code binds and uses."""

    bound: frozenset[str] = frozenset()
    #: names assigned (a function's locals, where the patch sits in one)
    assigned: frozenset[str] = frozenset()
    #: methods and ``self.x = ...`` attributes it defines
    attrs: frozenset[str] = frozenset()
    used: frozenset[str] = frozenset()
    used_attrs: frozenset[str] = frozenset()
    #: dotted modules it imports (``from a.b import c`` gives ``a.b`` and ``a.b.c``)
    modules: frozenset[str] = frozenset()

    def __sub__(self, other: Names) -> Names:
        return Names(
            self.bound - other.bound,
            self.assigned - other.assigned,
            self.attrs - other.attrs,
            self.used - other.used,
            self.used_attrs - other.used_attrs,
            self.modules - other.modules,
        )


def _parse(text: str) -> ast.AST | None:
    """``text`` as a module, dedented; a definition's header alone gets an empty body."""
    code = textwrap.dedent(text)
    for attempt in (code, code.rstrip() + "\n    pass\n"):
        try:
            return ast.parse(attempt)
        except SyntaxError:
            continue
    return None


def _absolute(node: ast.ImportFrom, package: str) -> str | None:
    """The module a ``from`` import names, a relative one (``from .c import x``) resolved against
    the importing file's package; None where it climbs above the top."""
    if not node.level:
        return node.module or ""
    bits = package.rsplit(".", node.level - 1) if package else []
    if len(bits) < node.level:
        return None
    return f"{bits[0]}.{node.module}" if node.module else bits[0]


def names(text: str, package: str = "") -> Names:
    tree = _parse(text)
    if tree is None:
        return Names()
    bound: set[str] = set()
    assigned: set[str] = set()
    attrs: set[str] = set()
    used: set[str] = set()
    used_attrs: set[str] = set()
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            attrs.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            base = _absolute(node, package) if isinstance(node, ast.ImportFrom) else ""
            for alias in node.names:
                bound.add((alias.asname or alias.name).split(".")[0])
                if base is not None:
                    modules.add(f"{base}.{alias.name}" if base else alias.name)
            if base:
                modules.add(base)
        elif isinstance(node, ast.Name):
            (used if isinstance(node.ctx, ast.Load) else assigned).add(node.id)
        elif isinstance(node, ast.Attribute):
            is_self = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            if isinstance(node.ctx, ast.Load):
                used_attrs.add(node.attr)
            elif is_self:
                attrs.add(node.attr)
    return Names(
        frozenset(bound),
        frozenset(assigned),
        frozenset(attrs),
        frozenset(used - bound - assigned),
        frozenset(used_attrs),
        frozenset(modules),
    )


def added(d: Draft) -> Names:
    """What the patch's new text binds and uses that its old text did not."""
    package = ".".join(d.path.split("/")[:-1])
    if d.kind == "add-file":
        return (
            names((d.content or b"").decode("utf-8", errors="replace"), package) if d.path.endswith(".py") else Names()
        )
    if d.kind != "structural":
        return Names()
    return names(d.params.get("after", ""), package) - names(d.params.get("before", ""), package)


def _sees(user: Draft, binder: Draft) -> bool:
    """Whether a name ``binder`` assigns is visible to ``user``: one assigned at module level is;
    one assigned in a function is that function's local, seen only by patches in the same scope."""
    scope = binder.params.get("scope", "")
    return not scope or scope == user.params.get("scope", "")


def module_of(path: str) -> str | None:
    """The dotted module a new Python file provides (``a/b/__init__.py`` is ``a.b``)."""
    if not path.endswith(".py"):
        return None
    parts = path[:-3].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _base_locals(d: Draft, cache: dict[tuple[str, str], frozenset[str]]) -> frozenset[str]:
    """The names BASE already binds in ``d``'s function (its parameters and every name assigned
    in it): a use of one needs no patch of the fork that assigns it again. Skywork's and
    Search-R1's ``fit`` re-assign ``batch`` in one edit and read it in another; linked by that
    name, the reading edit was held back whenever the other conflicted (issue 38 req 2: link
    only what must travel together). Empty at module level and where BASE does not parse."""
    scope = str(d.params.get("scope", ""))
    key = (d.path, scope)
    if key in cache:
        return cache[key]
    out: frozenset[str] = frozenset()
    node: ast.AST | None = _parse("".join(d.base_lines)) if scope and d.base_lines else None
    for name in scope.split(".") if node is not None else ():
        body = getattr(node, "body", [])
        node = next(
            (
                c
                for c in body
                if isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and c.name == name
            ),
            None,
        )
        if node is None:
            break
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = node.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs, *filter(None, (args.vararg, args.kwarg))]
        stored = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        out = frozenset({a.arg for a in params} | stored)
    cache[key] = out
    return out


def link(drafts: Sequence[Draft]) -> tuple[Draft, ...]:
    """The drafts with ``needs`` filled in, in the same order."""
    found = {d.id: added(d) for d in drafts}
    provides = {m: d.id for d in drafts if d.kind == "add-file" and (m := module_of(d.path))}
    cache: dict[tuple[str, str], frozenset[str]] = {}
    out = []
    for d in drafts:
        mine = found[d.id]
        deps = [
            o.id
            for o in drafts
            if o.id != d.id
            and o.kind != "add-file"
            and o.path == d.path
            and (
                mine.used & found[o.id].bound
                or mine.used_attrs & found[o.id].attrs
                or (mine.used & found[o.id].assigned - _base_locals(d, cache) and _sees(d, o))
            )
        ]
        deps += [provides[m] for m in sorted(mine.modules) if m in provides and provides[m] != d.id]
        out.append(replace(d, needs=tuple(dict.fromkeys(deps))) if deps else d)
    return tuple(out)
