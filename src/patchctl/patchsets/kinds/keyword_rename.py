"""keyword-rename: comment out one keyword argument of a call and add its successor, both tagged.

The fork's vLLM fix is the model case: inside ``AsyncLLM.from_vllm_config(...)`` the line
``disable_log_requests=engine_args.disable_log_requests,`` becomes::

    # disable_log_requests=engine_args.disable_log_requests, # Uky
    enable_log_requests=engine_args.enable_log_requests, # Uky

The old line stays as a comment so a reader (and :meth:`revert`) can see what was there. Finding
the call and rewriting it in place live in :mod:`patchctl.patchsets.kinds.calls`, which the
``call-keyword`` upstream rule shares.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from patchctl.patchsets.kinds import calls, kwline
from patchctl.patchsets.kinds.base import Check, Context, Edit, EditStatus, tag_comment
from patchctl.patchsets.model import Patch, Presence
from patchctl.patchsets.placement.pyparse import check_expressions, parse_ast, same_expr
from patchctl.records import record
from patchctl.schema import Field, Schema

if TYPE_CHECKING:
    import libcst as cst


@record(frozen=True)
class Params:
    #: the callee as written, e.g. ``AsyncLLM.from_vllm_config``
    call: str
    old_keyword: str
    new_keyword: str
    #: the new argument's value expression
    new_value: str
    #: the value the old keyword is expected to carry; a different one is a conflict
    old_value: str | None = None


class KeywordRename:
    name: ClassVar[str] = "keyword-rename"
    description: ClassVar[str] = "Comment out a call's keyword argument and add its replacement, both tagged."
    creates_target: ClassVar[bool] = False
    #: its check reads only the text, the patch and the file's name: a ``present`` is kept (proofs)
    proof_cached: ClassVar[bool] = True
    params_schema: ClassVar[Schema] = {
        "call": Field(str, True, 'the callee, e.g. "AsyncLLM.from_vllm_config"'),
        "old_keyword": Field(str, True, "the keyword being replaced"),
        "new_keyword": Field(str, True, "the keyword that replaces it"),
        "new_value": Field(str, True, "a Python expression for the new argument"),
        "old_value": Field(str, False, "the expression the old keyword is expected to pass"),
    }

    def parse_params(self, raw: dict[str, Any], patchset_root: Path, manifest: Path, patch_id: str) -> Params:
        check_expressions(raw, ("new_value", "old_value"), manifest, patch_id, "engine_args.flag")
        return Params(**raw)

    # -- helpers ---------------------------------------------------------------------------

    @staticmethod
    def _line_re(keyword: str, tag: str) -> re.Pattern[str]:
        return re.compile(rf"^\s*{re.escape(keyword)}\s*=\s*(?P<value>.+?)(?P<comma>,?)\s+# {re.escape(tag)}$")

    def _shape(self, lines: list[str], site: calls.Site, patch: Patch) -> str | None:
        """None when the tagged pair of lines sits at ``site`` exactly; else what differs."""
        p: Params = patch.params
        assert site.keyword is not None
        n = site.keyword.lineno  # the line where `name=` starts
        m = self._line_re(p.new_keyword, patch.tag).match(lines[n - 1])
        if not m:
            return f"{p.new_keyword}= is not tagged {tag_comment(patch.tag)}"
        if not same_expr(m.group("value"), p.new_value):
            return f"{p.new_keyword}={m.group('value')} (expected {p.new_value})"
        above = lines[n - 2].strip() if n >= 2 else ""
        if not (re.match(rf"# {re.escape(p.old_keyword)}\s*=", above) and above.endswith(" " + tag_comment(patch.tag))):
            return f"the commented-out `{p.old_keyword}=...` line above it is missing"
        return None

    # -- the three operations ----------------------------------------------------------------

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        p: Params = patch.params
        if text is None:
            return Check(Presence.MISSING, f"{ctx.path} does not exist")
        if p.call.rsplit(".", 1)[-1] not in text:
            return Check(Presence.MISSING, f"no call to {p.call}(...)")
        lines = text.splitlines()
        tagged = [s for s in calls.sites(parse_ast(text, ctx.path), p.call, p.new_keyword) if s.keyword]
        for site in tagged:
            if self._shape(lines, site, patch) is None:
                n = site.keyword.lineno  # type: ignore[union-attr] # tagged holds only sites with a keyword
                return Check(
                    Presence.PRESENT,
                    f"{p.call}(...) at line {site.line} passes {p.new_keyword}= tagged",
                    frozenset({n - 1, n}),
                )
        for site in tagged:
            n = site.keyword.lineno  # type: ignore[union-attr] # as above
            if tag_comment(patch.tag) in lines[n - 1]:
                return Check(
                    Presence.MODIFIED,
                    f"{p.call}(...) at line {site.line}: {self._shape(lines, site, patch)}",
                    _modified_lines(lines, n, p.old_keyword, tag_comment(patch.tag)),
                )
        return Check(Presence.MISSING, f"no tagged {p.new_keyword}= in {p.call}(...)")

    def apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} does not exist")
        sites = calls.sites(parse_ast(text, ctx.path), p.call, p.old_keyword)
        if not sites:
            return Edit(EditStatus.NOT_APPLICABLE, f"no call to {p.call}(...) in {ctx.path}")
        hits = [s for s in sites if s.keyword]
        if not hits:
            lines = ", ".join(str(s.line) for s in sites)
            return Edit(EditStatus.NOT_APPLICABLE, f"{p.call}(...) at line {lines} passes no {p.old_keyword}= keyword")
        if len(hits) > 1:
            return Edit(
                EditStatus.AMBIGUOUS,
                f"{p.call}(...) passes {p.old_keyword}= at lines "
                f"{', '.join(str(s.line) for s in hits)}; narrow the patch's call or target",
            )
        site = hits[0]
        found = ast.get_source_segment(text, site.keyword.value) or ""  # type: ignore[union-attr] # hits are sites passing the keyword
        if p.old_value is not None and not same_expr(found, p.old_value):
            return Edit(
                EditStatus.CONFLICT,
                f"line {site.line}: {p.old_keyword}={found}, the patch expects {p.old_keyword}={p.old_value}",
            )
        problem: list[str] = []
        out = kwline.rename_on_its_line(text, site.keyword, p.new_keyword, p.new_value, tag_comment(patch.tag)) or (  # type: ignore[arg-type] # hits pass the keyword
            calls.rewrite_site(
                text, ctx.path, p.call, site, lambda module: lambda call: self._forward(module, call, patch, problem)
            )
        )
        if problem:
            return Edit(EditStatus.CONFLICT, f"line {site.line}: {problem[0]}")
        return Edit(EditStatus.CHANGED, f"{p.call}(...) at line {site.line}: {p.old_keyword}= -> {p.new_keyword}=", out)

    def _forward(self, module: cst.Module, call: cst.Call, patch: Patch, problem: list[str]) -> cst.Call:
        import libcst as cst

        p: Params = patch.params
        index = next(i for i, a in enumerate(call.args) if a.keyword and a.keyword.value == p.old_keyword)
        arg = call.args[index]
        before, trail = calls.before(call, index), calls.trail(arg)
        if not isinstance(before, cst.ParenthesizedWhitespace) or not isinstance(trail, cst.ParenthesizedWhitespace):
            problem.append(
                f"{p.old_keyword}= shares a line with other arguments; put it on a line of its own and apply again"
            )
            return call
        if trail.first_line.comment is not None:
            problem.append(
                f"{p.old_keyword}= carries a comment ({trail.first_line.comment.value}); remove it and apply again"
            )
            return call
        bare = arg.with_changes(
            comma=cst.Comma() if isinstance(arg.comma, cst.Comma) else cst.MaybeSentinel.DEFAULT,
            whitespace_after_arg=cst.SimpleWhitespace(""),
        )
        comment = cst.EmptyLine(
            indent=True,
            whitespace=before.last_line,
            comment=cst.Comment(f"# {module.code_for_node(bare)} {tag_comment(patch.tag)}"),
        )
        first = trail.first_line
        new_trail = trail.with_changes(
            first_line=first.with_changes(
                whitespace=cst.SimpleWhitespace(first.whitespace.value + " "),
                comment=cst.Comment(tag_comment(patch.tag)),
            )
        )
        new_arg = calls.with_trail(
            arg.with_changes(keyword=cst.Name(p.new_keyword), value=cst.parse_expression(p.new_value)), new_trail
        )
        args = list(call.args)
        args[index] = new_arg
        return calls.set_before(
            call.with_changes(args=args), index, before.with_changes(empty_lines=[*before.empty_lines, comment])
        )

    def revert(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} does not exist")
        lines = text.splitlines()
        sites = calls.sites(parse_ast(text, ctx.path), p.call, p.new_keyword)
        exact = [s for s in sites if s.keyword and self._shape(lines, s, patch) is None]
        if not exact:
            return Edit(EditStatus.NOT_APPLICABLE, f"no tagged {p.new_keyword}= in {p.call}(...) to revert")
        if len(exact) > 1:
            return Edit(
                EditStatus.AMBIGUOUS, "the tagged change appears at lines " + ", ".join(str(s.line) for s in exact)
            )
        site = exact[0]
        problem: list[str] = []
        out = calls.rewrite_site(
            text, ctx.path, p.call, site, lambda module: lambda call: self._backward(call, patch, problem)
        )
        if problem:
            return Edit(EditStatus.CONFLICT, f"line {site.line}: {problem[0]}")
        return Edit(EditStatus.CHANGED, f"restored {p.old_keyword}= in {p.call}(...) at line {site.line}", out)

    def _backward(self, call: cst.Call, patch: Patch, problem: list[str]) -> cst.Call:
        import libcst as cst

        p: Params = patch.params
        index = next(i for i, a in enumerate(call.args) if a.keyword and a.keyword.value == p.new_keyword)
        arg, before, trail = call.args[index], calls.before(call, index), calls.trail(call.args[index])
        assert isinstance(before, cst.ParenthesizedWhitespace) and isinstance(trail, cst.ParenthesizedWhitespace)
        commented = before.empty_lines[-1].comment.value  # type: ignore[union-attr] # the line above a renamed argument is its tagged comment
        old_arg = cst.parse_expression(f"f({commented[2 : -len(' ' + tag_comment(patch.tag))]})").args[0]  # type: ignore[attr-defined] # parse_expression of a call gives a Call
        if isinstance(arg.comma, cst.Comma) != isinstance(old_arg.comma, cst.Comma):
            problem.append("the commented line and the argument disagree on a trailing comma")
            return call
        first = trail.first_line
        restored = trail.with_changes(
            first_line=first.with_changes(whitespace=cst.SimpleWhitespace(first.whitespace.value[:-1]), comment=None)
        )
        new_arg = calls.with_trail(
            arg.with_changes(keyword=old_arg.keyword, equal=old_arg.equal, value=old_arg.value), restored
        )
        args = list(call.args)
        args[index] = new_arg
        return calls.set_before(
            call.with_changes(args=args), index, before.with_changes(empty_lines=before.empty_lines[:-1])
        )


def _modified_lines(lines: list[str], n: int, old_keyword: str, tag: str) -> frozenset[int]:
    """The lines a hand-edited rename still owns: its keyword's line ``n``, and the commented-out
    original above it where that is still there, which ``verify`` listed as a stray tag."""
    above = lines[n - 2].strip() if n >= 2 else ""
    kept = above.startswith("#") and f"{old_keyword}=" in above and tag in above
    return frozenset({n - 1, n}) if kept else frozenset({n})
