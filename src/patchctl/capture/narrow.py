"""Trying the narrow kinds first: a captured edit becomes keyword-rename, prelude or shell-env
when that kind, applied to BASE, reproduces the fork's text exactly; otherwise it stays
structural. Proof by trial keeps capture honest about the narrow kinds' exact formats.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path
from typing import Any

from patchctl.errors import PatchctlError
from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.model import Patch
from patchctl.patchsets.placement.pyparse import dotted_ast, first_import


def reproduces(kind: str, raw: dict[str, Any], base_text: str, expected: str, rel: str, tag: str) -> bool:
    """Whether ``kind`` with ``raw`` params turns ``base_text`` into ``expected``."""
    k = KINDS[kind]
    try:
        params = k.parse_params(raw, Path("."), Path("patchset.toml"), "trial")
        edit = k.apply(base_text, Patch("trial", "", "", tag, kind, (rel,), params), Context(Path("."), rel))
    except (PatchctlError, ValueError, SyntaxError):
        return False
    return edit.status is EditStatus.CHANGED and edit.text == expected


def before_first_import(base_tree: ast.Module, span: tuple[int, int]) -> bool:
    """Whether a module-level gap ends right at BASE's first import (where a prelude goes).

    A cheap test that spares the libcst trial for insertions elsewhere in a module.
    """
    first = first_import(base_tree)
    return first is not None and span[0] <= first.lineno <= span[1] + 1


def prelude(before: str, after: str) -> dict[str, Any] | None:
    """A module-level insertion: the prelude kind's block, if it is one."""
    if before.strip():
        return None
    block = after.strip("\r\n")
    return {"block": block} if block.strip() else None


def _calls(code: str) -> list[ast.Call]:
    try:
        tree = ast.parse(textwrap.dedent(code))
    except SyntaxError:
        return []
    return sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))


def keyword_rename(before: str, after: str) -> dict[str, Any] | None:
    """One call whose only change is one keyword swapped for another: keyword-rename's params."""
    old_calls, new_calls = _calls(before), _calls(after)
    if len(old_calls) != len(new_calls):
        return None
    found = None
    old_src, new_src = textwrap.dedent(before), textwrap.dedent(after)
    for old, new in zip(old_calls, new_calls, strict=True):
        if dotted_ast(old.func) != dotted_ast(new.func):
            return None
        a, b = {k.arg for k in old.keywords}, {k.arg for k in new.keywords}
        if a == b:
            continue
        gone, came = a - b, b - a
        if len(gone) != 1 or len(came) != 1 or found is not None or dotted_ast(old.func) is None:
            return None
        (old_kw,), (new_kw,) = gone, came
        old_val = next(k.value for k in old.keywords if k.arg == old_kw)
        new_val = next(k.value for k in new.keywords if k.arg == new_kw)
        found = {
            "call": dotted_ast(old.func),
            "old_keyword": old_kw,
            "new_keyword": new_kw,
            "new_value": ast.get_source_segment(new_src, new_val) or "",
            "old_value": ast.get_source_segment(old_src, old_val) or "",
        }
    return found


_EXPORT = re.compile(r"^\s*export\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*?)\s+#\s*(?P<tag>\S+)\s*$")


def shell_env(added: list[str], next_line: str | None, tag: str) -> list[dict[str, Any]]:
    """Candidate shell-env params for inserted ``export NAME=VALUE  # tag`` lines."""
    pairs = []
    for line in added:
        m = _EXPORT.match(line.rstrip("\r\n"))
        if not m or m.group("tag") != tag:
            return []
        pairs.append(f"{m.group('name')}={m.group('value')}")
    if not pairs:
        return []
    out: list[dict[str, Any]] = [{"env": pairs}]
    if next_line and next_line.strip():
        out.append({"env": pairs, "before": "^" + re.escape(next_line.rstrip("\r\n"))})
    return out
