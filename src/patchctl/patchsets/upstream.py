"""Recognising that upstream already contains a change, so the patch is not needed.

A rule kind is a finder in :data:`FINDERS`: given one file's text it returns a sentence saying
where upstream has the change, or None. ``python-name`` and ``regex`` look for text anywhere in
the file; ``call-keyword`` looks at the call a ``keyword-rename`` patch edits, because a name
that merely occurs elsewhere in the file says nothing about that call (issue 15: verl's
``dtype=torch.int32`` in an unrelated call marked a ``torch_dtype`` -> ``dtype`` rename as
superseded).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from typing import Any

from patchctl.patchsets.kinds.bom import strip_bom
from patchctl.patchsets.kinds.calls import calls
from patchctl.patchsets.model import UpstreamRule
from patchctl.patchsets.placement.pyparse import split_lines
from patchctl.records import record


@record(frozen=True)
class CallKeywordRule(UpstreamRule):
    """``call-keyword``: upstream's own calls of ``call`` pass ``new_keyword`` and none still
    passes ``old_keyword``. "Pass" means as a keyword argument, or as a key of a dict the call
    unpacks (``**kwargs``) that is built in the function holding the call, as verl 0.7.0 does
    for ``enable_log_requests``."""

    #: the callee as written, e.g. ``AsyncLLM.from_vllm_config`` (found as keyword-rename finds it)
    call: str = ""
    #: the keyword the patch replaces: a call still passing it needs the patch
    old_keyword: str = ""
    #: the keyword upstream passes once it has the change
    new_keyword: str = ""


def make_rule(raw: dict[str, Any]) -> UpstreamRule:
    """The rule a manifest's (already validated) ``upstream`` table describes."""
    files = tuple(raw.get("files", ()))
    if raw["kind"] == "call-keyword":
        return CallKeywordRule(
            "call-keyword",
            files=files,
            call=raw["call"],
            old_keyword=raw["old_keyword"],
            new_keyword=raw["new_keyword"],
        )
    return UpstreamRule(raw["kind"], tuple(raw.get("names", ())), raw.get("pattern", ""), files)


def _untagged(lines: list[str], tag: str) -> Callable[[int], bool]:
    """Whether line ``n`` (1-based) of ``lines`` is upstream's to judge: absent, or without the tag."""
    return lambda n: not (0 < n <= len(lines) and _tagged(lines[n - 1], tag))


def _tagged(line: str, tag: str) -> bool:
    return re.search(rf"#\s*{re.escape(tag)}\b", line) is not None


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


#: (rule, file, its text, "line n is upstream's": not tagged) -> where upstream has the change, or None
Finder = Callable[[UpstreamRule, str, str, Callable[[int], bool]], str | None]


def _python_name(rule: UpstreamRule, rel: str, text: str, untagged: Callable[[int], bool]) -> str | None:
    tree = _parse(text)
    names = set(rule.names)
    hits = []
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Name) and node.id in names:
            hits.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute) and node.attr in names:
            hits.append((node.lineno, node.attr))
        elif isinstance(node, ast.keyword) and node.arg in names:
            hits.append((node.value.lineno, node.arg))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
            hits.append((node.lineno, node.value))
    for line, name in sorted(hits, key=lambda h: h[0]):
        if untagged(line):
            return f"upstream already uses {name} ({rel}:{line}); the patch is not needed"
    return None


def _regex(rule: UpstreamRule, rel: str, text: str, untagged: Callable[[int], bool]) -> str | None:
    rx = re.compile(rule.pattern)
    for n, ln in enumerate(split_lines(text), 1):
        if rx.search(ln.rstrip("\r\n")) and untagged(n):
            return f"upstream already has it ({rel}:{n}: {ln.strip()[:80]}); the patch is not needed"
    return None


def _call_keyword(rule: UpstreamRule, rel: str, text: str, untagged: Callable[[int], bool]) -> str | None:
    assert isinstance(rule, CallKeywordRule)
    tree = _parse(text)
    if tree is None:
        return None
    found = None
    for call in calls(tree, rule.call):
        scope = _function_of(tree, call)
        if _passes(call, rule.old_keyword, scope, untagged):
            return None  # upstream still passes the old keyword there: the patch is needed
        how = _passes(call, rule.new_keyword, scope, untagged)
        if how and found is None:
            found = (
                f"upstream's {rule.call}(...) at {rel}:{call.lineno} passes {rule.new_keyword}= {how} "
                f"and no {rule.old_keyword}=; the patch is not needed"
            )
    return found


FINDERS: dict[str, Finder] = {"call-keyword": _call_keyword, "python-name": _python_name, "regex": _regex}


def kind_names() -> list[str]:
    """The ``upstream.kind`` values a manifest may use."""
    return sorted([*FINDERS, "none"])


def find(rule: UpstreamRule, path: str, read: Callable[[str], str | None], tag: str) -> str | None:
    """A sentence saying where upstream has the change, or None when it does not.

    Lines carrying the patch's tag are ignored: they are the fork's, not upstream's.
    """
    finder = FINDERS.get(rule.kind)
    if finder is None:
        return None
    for rel in (path, *rule.files):
        text = strip_bom(read(rel))  # ast.parse refuses the BOM Python itself accepts
        if text is None:
            continue
        said = finder(rule, rel, text, _untagged(split_lines(text), tag))
        if said:
            return said
    return None


# -- how a call passes a keyword -------------------------------------------------------------------


def _function_of(tree: ast.Module, call: ast.Call) -> ast.AST:
    """The innermost function holding ``call`` (the module at top level): where its ``**kwargs`` is built."""
    holding = [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.lineno <= call.lineno <= (node.end_lineno or 0)
    ]
    return max(holding, key=lambda node: node.lineno, default=tree)


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``scope`` outside the functions and classes defined in it: a dict that a
    nested function builds is another variable, even when it has the same name."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def _passes(call: ast.Call, keyword: str, scope: ast.AST, untagged: Callable[[int], bool]) -> str | None:
    """How ``call`` passes ``keyword`` in upstream's (untagged) code, or None when it does not."""
    for kw in call.keywords:
        if kw.arg == keyword and untagged(kw.lineno):
            return f"(line {kw.lineno})"
        if kw.arg is None and _holds(kw.value, keyword, untagged):
            return f"through ** (line {kw.value.lineno})"
        if kw.arg is None and isinstance(kw.value, ast.Name):
            line = _builds(scope, kw.value.id, keyword, untagged)
            if line is not None:
                return f"through **{kw.value.id} (built at line {line})"
    return None


def _key(node: ast.AST | None) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _holds(expr: ast.AST, key: str, untagged: Callable[[int], bool]) -> bool:
    """Whether a dict written in place has ``key``: ``{"key": ...}``, ``dict(key=...)``, ``a | b``."""
    if isinstance(expr, ast.Dict):
        return any(k is not None and _key(k) == key and untagged(k.lineno) for k in expr.keys)
    if isinstance(expr, ast.Call) and _is_name(expr.func, "dict"):
        return any(kw.arg == key and untagged(kw.lineno) for kw in expr.keywords) or any(
            _holds(a, key, untagged) for a in expr.args
        )
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr):
        return _holds(expr.left, key, untagged) or _holds(expr.right, key, untagged)
    return False


def _builds(scope: ast.AST, name: str, key: str, untagged: Callable[[int], bool]) -> int | None:
    """The first line in ``scope`` that puts ``key`` into the dict ``name``: ``name = {...}``,
    ``name[key] = ...``, ``name |= {...}``, ``name.update(...)`` or ``name.setdefault(key, ...)``."""
    lines = []
    for node in _own_nodes(scope):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                whole = _is_name(t, name) and node.value is not None and _holds(node.value, key, untagged)
                item = isinstance(t, ast.Subscript) and _is_name(t.value, name) and _key(t.slice) == key
                if whole or (item and untagged(t.lineno)):
                    lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_name(node.func.value, name):
            update = node.func.attr == "update" and (
                any(kw.arg == key and untagged(kw.lineno) for kw in node.keywords)
                or any(_holds(a, key, untagged) for a in node.args)
            )
            default = node.func.attr == "setdefault" and bool(node.args) and _key(node.args[0]) == key
            if update or (default and untagged(node.lineno)):
                lines.append(node.lineno)
    return min(lines, default=None)
