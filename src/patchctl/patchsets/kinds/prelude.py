"""prelude: a block of statements placed before a module's first import, after its docstring.

Used for fixes that must run before anything else the module imports (the fork's Triton
``-lcuda`` fix sets ``LD_LIBRARY_PATH`` before vLLM is imported). The block is kept
byte-exact and separated by one blank line on each side; ``from __future__`` imports stay first
because Python requires it.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from patchctl.errors import ManifestError
from patchctl.patchsets.kinds import preludeline
from patchctl.patchsets.kinds.base import Check, Context, Edit, EditStatus
from patchctl.patchsets.model import Patch, Presence
from patchctl.patchsets.placement.pyparse import (
    first_import,
    parse_ast,
    parse_module,
    split_lines,
)
from patchctl.quoting import quote_path
from patchctl.records import record
from patchctl.schema import Field, Schema

if TYPE_CHECKING:
    import libcst as cst


@record(frozen=True)
class Params:
    #: the exact text of the block, without a trailing newline
    block: str


def _is_blank(line: Any) -> bool:
    return line.comment is None and not line.whitespace.value


def _split_blank(lines: Any) -> tuple[list[Any], list[Any]]:
    lines = list(lines)
    n = 0
    while n < len(lines) and _is_blank(lines[n]):
        n += 1
    return lines[:n], lines[n:]


def _is_import(stmt: cst.BaseStatement) -> bool:
    import libcst as cst

    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Import):
            return True
        if isinstance(small, cst.ImportFrom):
            mod = small.module
            return not (isinstance(mod, cst.Name) and mod.value == "__future__")
    return False


class Prelude:
    name: ClassVar[str] = "prelude"
    description: ClassVar[str] = "Insert a block before the first import, after the module docstring."
    creates_target: ClassVar[bool] = False
    #: its check reads only the text, the patch and the file's name: a ``present`` is kept (proofs)
    proof_cached: ClassVar[bool] = True
    params_schema: ClassVar[Schema] = {
        "block": Field(str, True, "the block's exact text (a TOML multi-line string)"),
    }

    def parse_params(self, raw: dict[str, Any], patchset_root: Path, manifest: Path, patch_id: str) -> Params:
        block = raw["block"].rstrip("\n")
        try:
            stmts = ast.parse(block + "\n").body
        except SyntaxError as exc:
            raise ManifestError(
                manifest, "params.block", f"is not valid Python ({exc.msg})", "fix the block's code", patch_id
            ) from None
        if not stmts:
            raise ManifestError(manifest, "params.block", "holds no statement", "add the block's code", patch_id)
        return Params(block)

    # -- helpers ---------------------------------------------------------------------------

    @staticmethod
    def _block(block: str) -> list[cst.SimpleStatementLine | cst.BaseCompoundStatement]:
        import libcst as cst

        class PinIndent(cst.CSTTransformer):
            """Write the block's nested bodies with its own indentation, not the target's."""

            def leave_IndentedBlock(
                self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
            ) -> cst.IndentedBlock:
                return updated_node.with_changes(indent=updated_node.indent or module.default_indent)

        # a lone module puts leading comments in its header; they belong to the first statement
        module = cst.parse_module(block + "\n")
        module = module.visit(PinIndent())
        body = list(module.body)
        body[0] = body[0].with_changes(leading_lines=[*module.header, *body[0].leading_lines])
        return body

    @staticmethod
    def _find(text: str, tree: ast.Module, block_text: str) -> list[tuple[int, int]]:
        """(first, last) line of every place the block sits, byte-exact, at the module's top level."""
        want = block_text.splitlines()
        n_comments = next((i for i, ln in enumerate(want) if not ln.lstrip().startswith("#")), len(want))
        lines, out = text.splitlines(), []
        for stmt in tree.body:
            first = stmt.lineno - n_comments
            if first >= 1 and lines[first - 1 : first - 1 + len(want)] == want:
                out.append((first, first + len(want) - 1))
        return out

    @staticmethod
    def _tagged_lines(block: str, tag: str) -> list[str]:
        return [ln.strip() for ln in block.splitlines() if f"# {tag}" in ln or f"#{tag}" in ln]

    # -- the three operations ----------------------------------------------------------------

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        p: Params = patch.params
        if text is None:
            return Check(Presence.MISSING, f"{ctx.path} does not exist")
        found = self._find(text, parse_ast(text, ctx.path), p.block)
        if found:
            first, last = found[0]
            return Check(Presence.PRESENT, f"block present at lines {first}-{last}", frozenset(range(first, last + 1)))
        marks = self._tagged_lines(p.block, patch.tag)
        lines = text.splitlines()
        hits = [n for n, ln in enumerate(lines, 1) if ln.strip() in marks]
        if hits:
            start = hits[0]
            have = lines[start - 1 : start - 1 + len(p.block.splitlines())]
            import difflib  # here: only a block that differs has a diff to show (issue 39.13)

            diff = "\n".join(
                difflib.unified_diff(p.block.splitlines(), have, "expected", quote_path(ctx.path), lineterm="")
            )
            return Check(
                Presence.MODIFIED, f"the tagged block at line {start} differs from the patch", frozenset(hits), diff
            )
        return Check(Presence.MISSING, "block not present")

    def apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} does not exist")
        fast = preludeline.insert(text, parse_ast(text, ctx.path), p.block)  # no libcst import (start-up)
        if fast is not None:
            return Edit(
                EditStatus.CHANGED, f"block inserted before `{fast[2]}`", fast[0], undo={"blank_before": fast[1]}
            )
        import libcst as cst

        # libcst needs only the module's head: everything after the first import stays as is,
        # and a 600-line module costs ~0.1 s to parse and print whole
        head, tail = self._split_after_first_import(text, ctx.path)
        module = parse_module(head, ctx.path)
        body = list(module.body)
        at = next((i for i, s in enumerate(body) if _is_import(s)), None)
        if at is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} has no top-level import to place the block before")
        blanks, rest = _split_blank(body[at].leading_lines)
        # at the top of a file, blank lines after a comment header belong to the module header
        header_blanks = len(_split_blank(list(reversed(module.header)))[0]) if at == 0 else 0
        something_before = at > 0 or bool(module.header)
        block = self._block(p.block)
        lead = blanks if blanks or header_blanks else ([cst.EmptyLine()] if something_before else [])
        block[0] = block[0].with_changes(leading_lines=[*lead, *block[0].leading_lines])
        body[at] = body[at].with_changes(leading_lines=[cst.EmptyLine(), *rest])
        new = module.with_changes(body=[*body[:at], *block, *body[at:]])
        first_import = module.code_for_node(body[at].with_changes(leading_lines=[])).strip().splitlines()[0]
        return Edit(
            EditStatus.CHANGED,
            f"block inserted before `{first_import}`",
            new.code + tail,
            undo={"blank_before": len(blanks) + header_blanks},
        )

    @staticmethod
    def _split_after_first_import(text: str, path: str) -> tuple[str, str]:
        """(the text through the first top-level import, the rest); all of it when none is found."""
        first = first_import(parse_ast(text, path))
        if first is None or first.end_lineno is None:
            return text, ""
        lines = split_lines(text)
        return "".join(lines[: first.end_lineno]), "".join(lines[first.end_lineno :])

    def revert(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        """Remove the block, the blank line apply put after it, and restore the blank lines above."""
        p: Params = patch.params
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} does not exist")
        found = self._find(text, parse_ast(text, ctx.path), p.block)
        if not found:
            return Edit(EditStatus.NOT_APPLICABLE, "block not present; nothing to revert")
        if len(found) > 1:
            return Edit(EditStatus.AMBIGUOUS, "the block appears at lines " + ", ".join(f"{a}-{b}" for a, b in found))
        first, last = found[0]
        lines = text.splitlines(keepends=True)
        above = 0
        while first - 2 - above >= 0 and not lines[first - 2 - above].strip():
            above += 1
        keep_above = above if not ctx.undo or "blank_before" not in ctx.undo else int(ctx.undo["blank_before"])
        after = last + 1 if last < len(lines) and not lines[last].strip() else last
        blank = lines[first - 2] if above else ("\r\n" if text.endswith("\r\n") else "\n")
        new = [*lines[: first - 1 - above], *[blank] * keep_above, *lines[after:]]
        return Edit(EditStatus.CHANGED, f"block at lines {first}-{last} removed", "".join(new))
