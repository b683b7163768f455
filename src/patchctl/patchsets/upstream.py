"""Recognising that upstream already contains a change, so the patch is not needed."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from patchctl.patchsets.model import UpstreamRule


def _tagged(line: str, tag: str) -> bool:
    return re.search(rf"#\s*{re.escape(tag)}\b", line) is not None


def _python_names(text: str, names: set[str]) -> list[tuple[str, int]]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in names:
            hits.append((node.id, node.lineno))
        elif isinstance(node, ast.Attribute) and node.attr in names:
            hits.append((node.attr, node.lineno))
        elif isinstance(node, ast.keyword) and node.arg in names:
            hits.append((node.arg, node.value.lineno))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
            hits.append((node.value, node.lineno))
    return sorted(hits, key=lambda h: h[1])


def find(rule: UpstreamRule, path: str, read: Callable[[str], str | None], tag: str) -> str | None:
    """A sentence saying where upstream has the change, or None when it does not.

    Lines carrying the patch's tag are ignored: they are the fork's, not upstream's.
    """
    if rule.kind == "none":
        return None
    for rel in (path, *rule.files):
        text = read(rel)
        if text is None:
            continue
        lines = text.splitlines()
        if rule.kind == "python-name":
            for name, line in _python_names(text, set(rule.names)):
                if not _tagged(lines[line - 1], tag):
                    return f"upstream already uses {name} ({rel}:{line}); the patch is not needed"
        else:
            rx = re.compile(rule.pattern)
            for n, ln in enumerate(lines, 1):
                if rx.search(ln) and not _tagged(ln, tag):
                    return f"upstream already has it ({rel}:{n}: {ln.strip()[:80]}); the patch is not needed"
    return None
