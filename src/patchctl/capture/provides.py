"""What captured patches give other files: new definitions, new modules and new config keys.

:mod:`patchctl.capture.crossfile` links a use in one file to the patch in another file that
provides what it uses. Only what the fork *added* is provided: a name BASE's module (or class)
already had is no one patch's, and a use of it needs nothing. A name two patches both add is
ambiguous and provided by neither, since a wrong link holds back a good patch.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from patchctl.capture.links import module_of
from patchctl.capture.model import Draft, Request
from patchctl.patchsets.kinds import keypath
from patchctl.patchsets.placement.anchors import find_scopes
from patchctl.patchsets.placement.pyparse import split_lines

_WORD = re.compile(r"\w+")
_IMPORT = re.compile(r"\s*(from|import)\s")
#: config files larger than this are data, not configs: not read for the keys BASE has
_CONFIG_LIMIT = 1 << 20


@dataclass(frozen=True)
class Provided:
    #: fully qualified names a patch newly defines (``verl.utils.a.helper``, ``verl.utils.a.Foo.run``)
    names: dict[str, Draft]
    #: dotted modules an add-file patch creates (``verl.utils.new``)
    modules: dict[str, Draft]
    #: config keys a config-key patch adds, by the key's own name: (its path, the patch)
    keys: dict[str, tuple[tuple[str, ...], Draft]]

    def named_by(self, rel: str, lines: Iterable[str], text: str) -> bool:
        """Whether ``lines`` of ``rel`` (whose whole text is ``text``) may use a definition or key another
        file provides: they name it by its last word, and for a definition the file imports its module
        (its last word on an import line). Resolving names costs a parse of the whole file with libcst,
        which a file that passes neither needs not; an import of a new module is
        :mod:`patchctl.capture.links`' to find, which reads every import of an edit's text."""
        imported = {w for line in text.splitlines() if _IMPORT.match(line) for w in _WORD.findall(line)}
        words = {
            q.rsplit(".", 1)[-1]
            for q, d in self.names.items()
            if d.path != rel and str(module_of(d.path)).rsplit(".", 1)[-1] in imported
        }
        words |= {k for k, (_, d) in self.keys.items() if d.path != rel}
        return any(set(_WORD.findall(line)) & words for line in lines)


def provided(req: Request, drafts: Sequence[Draft]) -> Provided:
    # each name once per patch: one that binds it in both branches of a try or an if is still its only provider
    names = [(q, d) for d in drafts for q in dict.fromkeys(_defined(d))]
    modules = {m: d for d in drafts if d.kind == "add-file" and (m := module_of(d.path))}
    once = Counter(q for q, _ in names)
    keys = [(tuple(d.params["path"]), d) for d in drafts if d.kind == "config-key" and "was" not in d.params]
    twice = Counter(path[-1] for path, _ in keys)
    known = _base_keys(req) if keys else frozenset()
    return Provided(
        {q: d for q, d in names if once[q] == 1},
        modules,
        {path[-1]: (path, d) for path, d in keys if twice[path[-1]] == 1 and path[-1] not in known},
    )


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(textwrap.dedent(text))
    except (SyntaxError, ValueError):
        return None


def _top_names(
    tree: ast.AST | None, prefix: str = "", imports: tuple[type[ast.stmt], ...] = (ast.Import, ast.ImportFrom)
) -> Iterator[str]:
    """Names a block binds at its own level (inside ``if``/``try``/``with``, not inside a def),
    and, for a class it defines, the class's own names after a dot; of imports, those of ``imports``."""
    for node in _level(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield prefix + node.name
            if isinstance(node, ast.ClassDef):
                yield from _top_names(node, f"{prefix}{node.name}.", imports)
        elif isinstance(node, imports) and isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from (prefix + (a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            yield from (prefix + t.id for t in targets if isinstance(t, ast.Name))


def _level(tree: ast.AST | None) -> Iterator[ast.stmt]:
    todo = list(getattr(tree, "body", []))
    while todo:
        node = todo.pop(0)
        yield node
        if isinstance(node, (ast.If, ast.For, ast.While)):
            todo += [*node.body, *node.orelse]
        elif isinstance(node, ast.With):
            todo += node.body
        elif isinstance(node, ast.Try):
            todo += [*node.body, *node.orelse, *(s for h in node.handlers for s in h.body), *node.finalbody]


def _self_attrs(tree: ast.AST | None) -> set[str]:
    """``self.x`` attributes the code assigns."""
    if tree is None:
        return set()
    return {
        t.attr
        for n in ast.walk(tree)
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else [])
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
    }


def _defined(d: Draft) -> Iterable[str]:
    """Fully qualified names a structural patch newly defines at module or class level: a function,
    class, import or assignment; a method; a ``self.`` attribute its method sets."""
    module = module_of(d.path)
    if d.kind != "structural" or module is None or d.params.get("mode") != "statements":
        return ()
    base = _parse("".join(d.base_lines))
    scope = str(d.params.get("scope", ""))
    after, before = _parse(d.params.get("after", "")), _parse(d.params.get("before", ""))
    if base is None or after is None:
        return ()
    where = find_scopes(base, scope)
    if len(where) != 1:
        return ()
    node = where[0]
    if isinstance(node, (ast.Module, ast.ClassDef)):
        had = set(_top_names(node)) | set(_top_names(before))
        if isinstance(node, ast.ClassDef):
            had |= _self_attrs(node)
        # an import a module adds is its own business, save a package's __init__ re-exporting a name
        shared: tuple[type[ast.stmt], ...] = (ast.ImportFrom,) if d.path.endswith("__init__.py") else ()
        new = [
            q for q in _top_names(after, imports=shared) if q not in had and not q.rsplit(".", 1)[-1].startswith("__")
        ]
        return [f"{module}.{scope + '.' if scope else ''}{q}" for q in new]
    owner = scope.rsplit(".", 1)[0] if "." in scope else ""
    klass = find_scopes(base, owner) if owner else []
    if len(klass) != 1 or not isinstance(klass[0], ast.ClassDef):
        return ()
    had = _self_attrs(klass[0]) | set(_top_names(klass[0])) | _self_attrs(before)
    return [f"{module}.{owner}.{a}" for a in sorted(_self_attrs(after) - had)]


def _base_keys(req: Request) -> frozenset[str]:
    """The key names BASE's config files already have: a key the fork adds under one of these names
    may be what code reads from another section or file, so it links nothing."""
    out: set[str] = set()
    for rel in req.base.files:
        fmt = keypath.fmt_of(rel)
        path = req.base.root / rel
        if fmt is None or path.is_symlink() or path.stat().st_size > _CONFIG_LIMIT:
            continue
        try:
            out |= {n.path[-1] for n in keypath.nodes(split_lines(path.read_text(encoding="utf-8")), fmt)}
        except (UnicodeDecodeError, ValueError):
            continue
    return frozenset(out)
