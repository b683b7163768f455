"""keyword-rename: comment out one keyword argument of a call and add its successor, both tagged.

The fork's vLLM fix is the model case: inside ``AsyncLLM.from_vllm_config(...)`` the line
``disable_log_requests=engine_args.disable_log_requests,`` becomes::

    # disable_log_requests=engine_args.disable_log_requests, # Uky
    enable_log_requests=engine_args.enable_log_requests, # Uky

The old line stays as a comment so a reader (and :meth:`revert`) can see what was there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import libcst as cst

from patchctl.errors import ManifestError
from patchctl.patchsets.kinds.base import Check, Context, Edit, EditStatus, tag_comment
from patchctl.patchsets.kinds.pyparse import dotted, parse_module, positions
from patchctl.patchsets.model import Patch, Presence
from patchctl.schema import Field, Schema


@dataclass(frozen=True)
class Params:
    #: the callee as written, e.g. ``AsyncLLM.from_vllm_config``
    call: str
    old_keyword: str
    new_keyword: str
    #: the new argument's value expression
    new_value: str
    #: the value the old keyword is expected to carry; a different one is a conflict
    old_value: str | None = None


@dataclass
class _Site:
    """One matching call and where the keyword sits in it."""

    call: cst.Call
    line: int
    index: int  # index of the keyword's Arg, or -1


def _before(call: cst.Call, index: int) -> cst.BaseParenthesizableWhitespace:
    return call.whitespace_before_args if index == 0 else call.args[index - 1].comma.whitespace_after  # type: ignore[union-attr]


def _trail(arg: cst.Arg) -> cst.BaseParenthesizableWhitespace:
    return arg.comma.whitespace_after if isinstance(arg.comma, cst.Comma) else arg.whitespace_after_arg


def _with_trail(arg: cst.Arg, trail: cst.ParenthesizedWhitespace) -> cst.Arg:
    if isinstance(arg.comma, cst.Comma):
        return arg.with_changes(comma=arg.comma.with_changes(whitespace_after=trail))
    return arg.with_changes(whitespace_after_arg=trail)


def _set_before(call: cst.Call, index: int, ws: cst.ParenthesizedWhitespace) -> cst.Call:
    if index == 0:
        return call.with_changes(whitespace_before_args=ws)
    args = list(call.args)
    prev = args[index - 1]
    args[index - 1] = prev.with_changes(comma=prev.comma.with_changes(whitespace_after=ws))  # type: ignore[union-attr]
    return call.with_changes(args=args)


class _ReplaceCall(cst.CSTTransformer):
    def __init__(self, old: cst.Call, new: cst.Call) -> None:
        self.old, self.new = old, new

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        return self.new if original_node is self.old else updated_node


class _FindCalls(cst.CSTVisitor):
    def __init__(self, callee: str) -> None:
        self.callee = callee
        self.calls: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        if dotted(node.func) == self.callee:
            self.calls.append(node)


class KeywordRename:
    name: ClassVar[str] = "keyword-rename"
    description: ClassVar[str] = "Comment out a call's keyword argument and add its replacement, both tagged."
    creates_target: ClassVar[bool] = False
    params_schema: ClassVar[Schema] = {
        "call": Field(str, True, 'the callee, e.g. "AsyncLLM.from_vllm_config"'),
        "old_keyword": Field(str, True, "the keyword being replaced"),
        "new_keyword": Field(str, True, "the keyword that replaces it"),
        "new_value": Field(str, True, "a Python expression for the new argument"),
        "old_value": Field(str, False, "the expression the old keyword is expected to pass"),
    }

    def parse_params(self, raw: dict[str, Any], patchset_root: Path, manifest: Path, patch_id: str) -> Params:
        for key in ("new_value", "old_value"):
            if key in raw:
                try:
                    cst.parse_expression(raw[key])
                except cst.ParserSyntaxError:
                    raise ManifestError(manifest, f"params.{key}", "is not a Python expression",
                                        "write an expression such as engine_args.flag", patch_id) from None
        return Params(**raw)

    # -- helpers ---------------------------------------------------------------------------

    def _sites(self, text: str, patch: Patch, ctx: Context, keyword: str) -> tuple[cst.Module, list[_Site], dict[cst.CSTNode, int]]:
        p: Params = patch.params
        module, lines = positions(parse_module(text, ctx.path))
        finder = _FindCalls(p.call)
        module.visit(finder)
        sites = []
        for call in finder.calls:
            idx = next((i for i, a in enumerate(call.args) if a.keyword and a.keyword.value == keyword), -1)
            sites.append(_Site(call, lines[call], idx))
        return module, sites, lines

    @staticmethod
    def _commented(module: cst.Module, arg: cst.Arg, tag: str) -> str:
        bare = arg.with_changes(
            comma=cst.Comma() if isinstance(arg.comma, cst.Comma) else cst.MaybeSentinel.DEFAULT,
            whitespace_after_arg=cst.SimpleWhitespace(""),
        )
        return f"# {module.code_for_node(bare)} {tag_comment(tag)}"

    def _applied_shape(self, module: cst.Module, site: _Site, patch: Patch) -> str | None:
        """None when the call carries the patch exactly; else what differs."""
        p: Params = patch.params
        arg = site.call.args[site.index]
        trail, before = _trail(arg), _before(site.call, site.index)
        if not (isinstance(trail, cst.ParenthesizedWhitespace) and trail.first_line.comment
                and trail.first_line.comment.value == tag_comment(patch.tag)):
            return f"{p.new_keyword}= is not tagged {tag_comment(patch.tag)}"
        if module.code_for_node(arg.value) != p.new_value:
            return f"{p.new_keyword}={module.code_for_node(arg.value)} (expected {p.new_value})"
        old_line = f"# {p.old_keyword}="
        if not (isinstance(before, cst.ParenthesizedWhitespace) and before.empty_lines
                and before.empty_lines[-1].comment
                and before.empty_lines[-1].comment.value.startswith(old_line)
                and before.empty_lines[-1].comment.value.endswith(" " + tag_comment(patch.tag))):
            return f"the commented-out `{old_line[2:]}...` line above it is missing"
        return None

    # -- the three operations ----------------------------------------------------------------

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        p: Params = patch.params
        if text is None:
            return Check(Presence.MISSING, f"{ctx.path} does not exist")
        module, sites, lines = self._sites(text, patch, ctx, p.new_keyword)
        tagged = [s for s in sites if s.index >= 0]
        for site in tagged:
            diff = self._applied_shape(module, site, patch)
            if diff is None:
                line = lines[site.call.args[site.index]]
                return Check(Presence.PRESENT, f"{p.call}(...) at line {site.line} passes {p.new_keyword}= tagged",
                             frozenset({line - 1, line}))
        for site in tagged:
            arg = site.call.args[site.index]
            trail = _trail(arg)
            if isinstance(trail, cst.ParenthesizedWhitespace) and trail.first_line.comment and \
                    tag_comment(patch.tag) in trail.first_line.comment.value:
                return Check(Presence.MODIFIED, f"{p.call}(...) at line {site.line}: {self._applied_shape(module, site, patch)}")
        return Check(Presence.MISSING, f"no tagged {p.new_keyword}= in {p.call}(...)")

    def apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} does not exist")
        module, sites, _ = self._sites(text, patch, ctx, p.old_keyword)
        if not sites:
            return Edit(EditStatus.NOT_APPLICABLE, f"no call to {p.call}(...) in {ctx.path}")
        hits = [s for s in sites if s.index >= 0]
        if not hits:
            lines = ", ".join(str(s.line) for s in sites)
            return Edit(EditStatus.NOT_APPLICABLE,
                        f"{p.call}(...) at line {lines} passes no {p.old_keyword}= keyword")
        if len(hits) > 1:
            return Edit(EditStatus.AMBIGUOUS, f"{p.call}(...) passes {p.old_keyword}= at lines "
                        f"{', '.join(str(s.line) for s in hits)}; narrow the patch's call or target")
        site = hits[0]
        arg = site.call.args[site.index]
        found = module.code_for_node(arg.value)
        if p.old_value is not None and found != p.old_value:
            return Edit(EditStatus.CONFLICT, f"line {site.line}: {p.old_keyword}={found}, "
                        f"the patch expects {p.old_keyword}={p.old_value}")
        before, trail = _before(site.call, site.index), _trail(arg)
        if not isinstance(before, cst.ParenthesizedWhitespace) or not isinstance(trail, cst.ParenthesizedWhitespace):
            return Edit(EditStatus.CONFLICT, f"line {site.line}: {p.old_keyword}= shares a line with other "
                        "arguments; put it on a line of its own and apply again")
        if trail.first_line.comment is not None:
            return Edit(EditStatus.CONFLICT, f"line {site.line}: {p.old_keyword}= carries a comment "
                        f"({trail.first_line.comment.value}); remove it and apply again")
        comment = cst.EmptyLine(indent=True, whitespace=before.last_line,
                                comment=cst.Comment(self._commented(module, arg, patch.tag)))
        new_before = before.with_changes(empty_lines=[*before.empty_lines, comment])
        first = trail.first_line
        new_trail = trail.with_changes(first_line=first.with_changes(
            whitespace=cst.SimpleWhitespace(first.whitespace.value + " "), comment=cst.Comment(tag_comment(patch.tag))))
        new_arg = _with_trail(arg.with_changes(keyword=cst.Name(p.new_keyword),
                                               value=cst.parse_expression(p.new_value)), new_trail)
        args = list(site.call.args)
        args[site.index] = new_arg
        new_call = _set_before(site.call.with_changes(args=args), site.index, new_before)
        out = module.visit(_ReplaceCall(site.call, new_call))
        return Edit(EditStatus.CHANGED, f"{p.call}(...) at line {site.line}: {p.old_keyword}= -> {p.new_keyword}=",
                    out.code)

    def revert(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} does not exist")
        module, sites, _ = self._sites(text, patch, ctx, p.new_keyword)
        exact = [s for s in sites if s.index >= 0 and self._applied_shape(module, s, patch) is None]
        if not exact:
            return Edit(EditStatus.NOT_APPLICABLE, f"no tagged {p.new_keyword}= in {p.call}(...) to revert")
        if len(exact) > 1:
            return Edit(EditStatus.AMBIGUOUS, "the tagged change appears at lines " + ", ".join(str(s.line) for s in exact))
        site = exact[0]
        before = _before(site.call, site.index)
        arg = site.call.args[site.index]
        assert isinstance(before, cst.ParenthesizedWhitespace)
        commented = before.empty_lines[-1].comment.value  # type: ignore[union-attr]
        old_code = commented[2: -len(" " + tag_comment(patch.tag))]
        old_arg = cst.parse_expression(f"f({old_code})").args[0]  # type: ignore[attr-defined]
        trail = _trail(arg)
        assert isinstance(trail, cst.ParenthesizedWhitespace)
        first = trail.first_line
        restored_trail = trail.with_changes(first_line=first.with_changes(
            whitespace=cst.SimpleWhitespace(first.whitespace.value[:-1]), comment=None))
        new_arg = arg.with_changes(keyword=old_arg.keyword, equal=old_arg.equal, value=old_arg.value)
        if isinstance(arg.comma, cst.Comma) != isinstance(old_arg.comma, cst.Comma):
            return Edit(EditStatus.CONFLICT, f"line {site.line}: the commented line and the argument disagree on a trailing comma")
        new_arg = _with_trail(new_arg, restored_trail)
        args = list(site.call.args)
        args[site.index] = new_arg
        new_call = _set_before(site.call.with_changes(args=args), site.index,
                               before.with_changes(empty_lines=before.empty_lines[:-1]))
        out = module.visit(_ReplaceCall(site.call, new_call))
        return Edit(EditStatus.CHANGED, f"restored {p.old_keyword}= in {p.call}(...) at line {site.line}", out.code)
