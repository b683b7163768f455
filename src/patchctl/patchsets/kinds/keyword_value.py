"""keyword-value: set or remove one keyword in matching calls (or dict displays), tagged.

Made for fixes that change a value verl hard-codes, such as
``attn_implementation="flash_attention_2"`` in several ``from_pretrained`` calls, or that drop
an argument, such as ``position_ids=`` in ``generate(...)``. Each changed line keeps the
original as a tagged comment directly above it, so a reader sees what was there and
:meth:`KeywordValue.revert` restores it byte for byte without the record::

    # attn_implementation="flash_attention_2",  # patchctl-compat
    attn_implementation=os.environ.get("VERL_ATTN_IMPLEMENTATION", "sdpa"),  # patchctl-compat

Removing leaves only the comment line. The edit is line based (the standard library's
parser only locates the sites), so the rest of the file keeps its exact bytes.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from patchctl.errors import ManifestError
from patchctl.patchsets.kinds.linerewrite import LineRewrite
from patchctl.patchsets.model import Patch
from patchctl.patchsets.placement.pyparse import check_expressions, split_lines
from patchctl.patchsets.placement.pyparse import dotted_ast as dotted
from patchctl.patchsets.placement.pyparse import parse_ast as parse
from patchctl.schema import Field, Schema


@dataclass(frozen=True)
class Params:
    keyword: str
    #: callees whose calls are changed, e.g. ``AutoConfig.from_pretrained``
    calls: tuple[str, ...]
    #: names a dict display is assigned to (``kwargs = {...}``); its string key is the keyword
    dicts: tuple[str, ...]
    #: set | remove
    action: str
    #: the new value's expression (set)
    value: str | None
    #: only sites passing exactly this expression are changed; None: every site
    old_value: str | None


@dataclass(frozen=True)
class _Site:
    line: int  # 1-based
    start: int  # column (characters) of the keyword / key
    end: int  # column after the value
    value_at: int  # column where the value starts
    value: str  # the value as written


def _suffix(tag: str) -> str:
    return f"  # {tag}"


def _col(line: str, byte_col: int) -> int:
    """ast counts columns in UTF-8 bytes; slicing needs characters."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def _elements(tree: ast.Module, p: Params) -> list[tuple[ast.AST, ast.AST, bool]]:
    """(span start node, span end node, is a call keyword) for every site naming the keyword."""
    out: list[tuple[ast.AST, ast.AST, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and dotted(node.func) in p.calls:
            out += [(k, k, True) for k in node.keywords if k.arg == p.keyword]
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        value = getattr(node, "value", None) if targets else None
        if isinstance(value, ast.Dict) and any(isinstance(t, ast.Name) and t.id in p.dicts for t in targets):
            for k, v in zip(value.keys, value.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == p.keyword:
                    out.append((k, v, False))
    return sorted(out, key=lambda e: (e[0].lineno, e[0].col_offset))  # type: ignore[attr-defined] # keywords and dict keys here both have positions


class KeywordValue(LineRewrite):
    name: ClassVar[str] = "keyword-value"
    description: ClassVar[str] = (
        "Set or remove a keyword in matching calls or dict displays; the old line stays as a tagged comment."
    )
    params_schema: ClassVar[Schema] = {
        "keyword": Field(str, True, 'the keyword, e.g. "attn_implementation"'),
        "calls": Field(list, False, 'callees as written, e.g. ["AutoConfig.from_pretrained"]', item=str),
        "dicts": Field(list, False, 'names of dicts built as literals, e.g. ["kwargs"]', item=str),
        "action": Field(str, False, '"set" or "remove"', choices=("set", "remove")),
        "value": Field(str, False, "the new value's Python expression (for set)"),
        "old_value": Field(str, False, "only change sites passing exactly this expression"),
    }

    def parse_params(self, raw: dict[str, Any], patchset_root: Path, manifest: Path, patch_id: str) -> Params:
        action = raw.get("action", "set")
        if not raw.get("calls") and not raw.get("dicts"):
            raise ManifestError(manifest, "params.calls", "missing", "list the callees (or dicts) to change", patch_id)
        if action == "set" and "value" not in raw:
            raise ManifestError(manifest, "params.value", "missing", "write the new value's expression", patch_id)
        check_expressions(raw, ("value", "old_value"), manifest, patch_id, '"sdpa"')
        return Params(
            raw["keyword"],
            tuple(raw.get("calls", ())),
            tuple(raw.get("dicts", ())),
            action,
            raw.get("value"),
            raw.get("old_value"),
        )

    # -- helpers ---------------------------------------------------------------------------

    def _sites(self, text: str, p: Params, path: str) -> tuple[list[_Site], list[str]]:
        """Every site passing the keyword (any value), and the problems that block editing them."""
        lines = [ln.rstrip("\r\n") for ln in split_lines(text)]
        sites, problems = [], []
        for first, last, is_kw in _elements(parse(text, path), p):
            line, end_line = first.lineno, last.end_lineno  # type: ignore[attr-defined] # as above: the nodes have positions
            if line != end_line:
                problems.append(f"line {line}: {p.keyword} spans several lines; put it on one line")
                continue
            body = lines[line - 1]
            start, end = _col(body, first.col_offset), _col(body, last.end_col_offset)  # type: ignore[attr-defined] # as above
            key_end = start + len(p.keyword) if is_kw else _col(body, first.end_col_offset)  # type: ignore[attr-defined] # as above
            at = body.index("=" if is_kw else ":", key_end) + 1
            while at < len(body) and body[at] in " \t":
                at += 1
            if not is_kw:
                # ast's span of a parenthesised dict value stops inside its parentheses
                opened = body[at : _col(body, last.col_offset)].count("(")  # type: ignore[attr-defined] # as above
                while opened and end < len(body) and body[end] in " \t)":
                    opened -= body[end] == ")"
                    end += 1
            sites.append(_Site(line, start, end, at, body[at:end]))
        return sites, problems

    @staticmethod
    def _wanted(site: _Site, p: Params) -> bool:
        if p.old_value is not None:
            return site.value == p.old_value
        return p.action == "remove" or site.value != p.value

    def _forward(self, text: str, patch: Patch, path: str) -> tuple[str, list[int], list[str]]:
        """The text with every untagged wanted site changed; the changed lines; the problems."""
        p: Params = patch.params
        suffix = _suffix(patch.tag)
        sites, problems = self._sites(text, p, path)
        lines = split_lines(text)
        todo = [s for s in sites if self._wanted(s, p) and not lines[s.line - 1].rstrip("\r\n").endswith(suffix)]
        if len({s.line for s in todo}) != len(todo):
            problems.append(f"{p.keyword} appears twice on one line; split the line")
        for s in sorted(todo, key=lambda s: -s.line):
            raw = lines[s.line - 1]
            body = raw.rstrip("\r\n")
            nl = raw[len(body) :]
            indent = body[: len(body) - len(body.lstrip())]
            comment = f"{indent}# {body[len(indent) :]}{suffix}"
            if p.action == "remove":
                if body[: s.start].strip() or body[s.end :].strip() not in ("", ","):
                    problems.append(
                        f"line {s.line}: {p.keyword} shares its line with other code; put it on a line of its own"
                    )
                    continue
                lines[s.line - 1 : s.line] = [comment + nl]
            else:
                new = body[: s.value_at] + str(p.value) + body[s.end :]
                lines[s.line - 1 : s.line] = [comment + (nl or "\n"), f"{new}{suffix}{nl}"]
        return "".join(lines), sorted(s.line for s in todo), problems

    def _backward(self, text: str, patch: Patch) -> tuple[str, list[int]]:
        """The text with every tagged pair of this patch restored; the 1-based lines they held."""
        p: Params = patch.params
        suffix = _suffix(patch.tag)
        kw = re.escape(p.keyword)
        mention = re.compile(rf"(\b{kw}\s*=(?!=))|([\"']{kw}[\"']\s*:)")
        lines = split_lines(text)
        out, owned, i = [], [], 0
        while i < len(lines):
            body = lines[i].rstrip("\r\n")
            nl = lines[i][len(body) :]
            stripped = body.lstrip()
            indent = body[: len(body) - len(stripped)]
            if stripped.startswith("# ") and body.endswith(suffix):
                orig = stripped[2 : -len(suffix)]
                mentions = mention.search(orig) is not None
                if mentions and p.action == "remove":
                    out.append(f"{indent}{orig}{nl}")
                    owned.append(i + 1)
                    i += 1
                    continue
                if mentions and i + 1 < len(lines):
                    nxt = lines[i + 1].rstrip("\r\n")
                    if nxt.endswith(suffix) and not nxt.lstrip().startswith("#") and nxt.startswith(indent):
                        out.append(f"{indent}{orig}{lines[i + 1][len(nxt) :]}")
                        owned += [i + 1, i + 2]
                        i += 2
                        continue
            out.append(lines[i])
            i += 1
        return "".join(out), owned

    # -- messages ----------------------------------------------------------------------------

    def _broken(self, new: str, path: str) -> str | None:
        try:
            ast.parse(new)
        except SyntaxError as exc:
            return (
                f"{path}: the edit would break the syntax at line {exc.lineno} (a backslash continuation?); "
                "change it by hand"
            )
        return None

    def _say_absent(self, p: Params, path: str) -> str:
        return f"no tagged {p.keyword} change in {path}"

    def _say_present(self, p: Params, owned: list[int]) -> str:
        return (
            f"{p.keyword} {'removed' if p.action == 'remove' else 'set'} at "
            f"{len(owned) // (1 if p.action == 'remove' else 2)} site(s)"
        )

    def _say_differs(self, p: Params, path: str) -> str:
        return (
            f"the tagged {p.keyword} lines in {path} differ from what the patch writes (edited by hand, "
            "or a site is still unpatched)"
        )

    def _say_edited(self, p: Params, path: str) -> str:
        return (
            f"the tagged {p.keyword} lines in {path} were edited after apply; restore them or revert the file with git"
        )

    def _say_nothing(self, p: Params, path: str) -> str:
        where = ", ".join([*p.calls, *p.dicts])
        wanted = f"={p.old_value}" if p.old_value else ""
        return f"nothing in {path} passes {p.keyword}{wanted} to {where}"

    def _say_done(self, p: Params, changed: list[int]) -> str:
        verb = "removed" if p.action == "remove" else f"set to {p.value}"
        return f"{p.keyword} {verb} at line(s) {', '.join(map(str, changed))}"

    def _say_restored(self, p: Params, owned: list[int]) -> str:
        return f"{p.keyword} restored at {len(owned)} line(s)"
