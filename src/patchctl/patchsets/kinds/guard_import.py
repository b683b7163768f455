"""guard-import: wrap a module-level import in ``try``/``except ImportError``, tagged.

For optional accelerators imported unconditionally: verl 0.5.0's actor imports
``flash_attn.bert_padding`` at module level whenever CUDA is present, although only
``use_remove_padding=True`` uses it, so a machine without flash-attn cannot even import the
actor. The import line is kept as it was (moved one level in) and every line the patch
writes carries the tag::

    try:  # patchctl-compat
        from flash_attn.bert_padding import pad_input, unpad_input  # patchctl-compat
    except ImportError:  # patchctl-compat
        pass  # patchctl-compat

Module level means the module's own statements and those nested in top-level ``if``/``else``
blocks (verl chooses the import by device there), never inside functions, classes or an
existing ``try``. The edit is line based, so :meth:`GuardImport.revert` is byte-exact.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from patchctl.errors import ManifestError
from patchctl.patchsets.kinds.linerewrite import LineRewrite
from patchctl.patchsets.model import Patch
from patchctl.patchsets.placement.pyparse import parse_ast as parse
from patchctl.patchsets.placement.pyparse import split_lines
from patchctl.schema import Field, Schema


@dataclass(frozen=True)
class Params:
    #: the imported module, e.g. ``flash_attn.bert_padding``
    module: str
    #: the except block's statements, one per line
    fallback: tuple[str, ...]
    exception: str


def _imports(stmt: ast.stmt, module: str) -> bool:
    if isinstance(stmt, ast.ImportFrom):
        return stmt.level == 0 and stmt.module == module
    return isinstance(stmt, ast.Import) and any(a.name == module for a in stmt.names)


def _module_level(body: list[ast.stmt], module: str, out: list[ast.stmt]) -> None:
    for stmt in body:
        if _imports(stmt, module):
            out.append(stmt)
        elif isinstance(stmt, ast.If):
            _module_level(stmt.body, module, out)
            _module_level(stmt.orelse, module, out)


def _tagged_run(window: list[str], tag: str) -> int:
    """How many lines from the window's start carry the tag."""
    run = 0
    while run < len(window) and window[run].endswith(tag):
        run += 1
    return run


def _unit(indent: str) -> str:
    return "\t" if "\t" in indent else "    "


class GuardImport(LineRewrite):
    name: ClassVar[str] = "guard-import"
    description: ClassVar[str] = "Wrap a module-level import in try/except ImportError, tagged."
    params_schema: ClassVar[Schema] = {
        "module": Field(str, True, 'the imported module, e.g. "flash_attn.bert_padding"'),
        "fallback": Field(str, False, 'the except block\'s code, default "pass"'),
        "exception": Field(
            str,
            False,
            '"ImportError" (default) or "ModuleNotFoundError"',
            choices=("ImportError", "ModuleNotFoundError"),
        ),
    }

    def parse_params(self, raw: dict[str, Any], patchset_root: Path, manifest: Path, patch_id: str) -> Params:
        fallback = raw.get("fallback", "pass").strip("\n")
        try:
            ast.parse(fallback + "\n")
        except SyntaxError as exc:
            raise ManifestError(
                manifest, "params.fallback", f"is not valid Python ({exc.msg})", "fix the fallback code", patch_id
            ) from None
        if any(ln.startswith((" ", "\t")) for ln in fallback.splitlines()) or not fallback.strip():
            raise ManifestError(
                manifest,
                "params.fallback",
                "must be unindented statements",
                'write e.g. "pass" or "unpad_input = None"',
                patch_id,
            )
        return Params(raw["module"], tuple(fallback.splitlines()), raw.get("exception", "ImportError"))

    # -- helpers ---------------------------------------------------------------------------

    def _forward(self, text: str, patch: Patch, path: str) -> tuple[str, list[int], list[str]]:
        p: Params = patch.params
        found: list[ast.stmt] = []
        _module_level(parse(text, path).body, p.module, found)
        lines = split_lines(text)
        tag = f"  # {patch.tag}"
        problems, changed = [], []
        for stmt in sorted(found, key=lambda s: -s.lineno):
            first, last = stmt.lineno, stmt.end_lineno
            if first != last:
                problems.append(f"line {first}: the import of {p.module} spans several lines; put it on one line")
                continue
            raw = lines[first - 1]
            body = raw.rstrip("\r\n")
            if body.endswith(tag):
                continue
            if stmt.col_offset != len(body) - len(body.lstrip()):
                problems.append(
                    f"line {first}: the import of {p.module} shares its line with other code; "
                    "put it on a line of its own"
                )
                continue
            nl = raw[len(body) :] or "\n"
            indent = body[: len(body) - len(body.lstrip())]
            unit = _unit(indent)
            block = [
                f"{indent}try:{tag}{nl}",
                f"{indent}{unit}{body[len(indent) :]}{tag}{nl}",
                f"{indent}except {p.exception}:{tag}{nl}",
                *[f"{indent}{unit}{ln}{tag}{nl}" for ln in p.fallback],
            ]
            block[-1] = block[-1][: len(block[-1]) - len(nl)] + raw[len(body) :]
            lines[first - 1 : first] = block
            changed.append(first)
        return "".join(lines), sorted(changed), problems

    def _backward(self, text: str, patch: Patch) -> tuple[str, list[int]]:
        p: Params = patch.params
        tag = f"  # {patch.tag}"
        lines = split_lines(text)
        out, owned, i = [], [], 0
        size = 3 + len(p.fallback)
        while i < len(lines):
            body = lines[i].rstrip("\r\n")
            indent = body[: len(body) - len(body.lstrip())]
            window = [ln.rstrip("\r\n") for ln in lines[i : i + size]]
            if body == f"{indent}try:{tag}" and len(window) == size:
                unit = _unit(indent)
                moved = window[1]
                expected = [f"{indent}except {p.exception}:{tag}", *[f"{indent}{unit}{ln}{tag}" for ln in p.fallback]]
                ours = moved.startswith(indent + unit) and moved.endswith(tag) and p.module in moved
                # an edited except block is still this patch's guard (its try and import lines
                # are): it is taken whole, so check's round trip says modified, not missing
                span = size if window[2:] == expected else _tagged_run(window, tag)
                if ours and span >= 2:
                    out.append(
                        f"{indent}{moved[len(indent + unit) : -len(tag)]}{lines[i + span - 1][len(window[span - 1]) :]}"
                    )
                    owned += list(range(i + 1, i + span + 1))
                    i += span
                    continue
            out.append(lines[i])
            i += 1
        return "".join(out), owned

    # -- messages ----------------------------------------------------------------------------

    def _say_absent(self, p: Params, path: str) -> str:
        return f"no guarded import of {p.module} in {path}"

    def _say_present(self, p: Params, owned: list[int]) -> str:
        return f"import of {p.module} guarded at line {owned[0]}"

    def _say_differs(self, p: Params, path: str) -> str:
        return (
            f"the tagged guard of {p.module} in {path} differs from what the patch writes (edited by hand, "
            "or an import is still unguarded)"
        )

    def _say_edited(self, p: Params, path: str) -> str:
        return (
            f"the tagged guard of {p.module} in {path} was edited after apply; restore it or revert the file with git"
        )

    def _say_nothing(self, p: Params, path: str) -> str:
        return f"{path} has no unguarded module-level import of {p.module}"

    def _say_done(self, p: Params, changed: list[int]) -> str:
        return f"import of {p.module} at line(s) {', '.join(map(str, changed))} guarded"

    def _say_restored(self, p: Params, owned: list[int]) -> str:
        return f"guard of {p.module} removed"
