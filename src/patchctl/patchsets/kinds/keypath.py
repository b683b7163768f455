"""Where each key of a YAML or TOML file sits, by key path, read line by line.

Why a line-level reader and not a YAML library: the config-key kind must leave every byte
outside the key it edits as upstream wrote it, comments and spacing included. A round-trip
library (ruamel.yaml) re-emits the whole document and would be a new dependency for patchctl;
PyYAML drops comments. verl's configs (``ppo_trainer.yaml`` and friends) are block-style YAML,
and a key's lines in block style are exactly its own line and the more-indented lines below
it, so knowing each key's line span is enough to set, add or remove it.

Flow-style YAML (``{a: 1}``) is one key's value here, not keys; a list item (``- x``) is part of
the value of the key above it. TOML arrays of tables (``[[x]]``) are opaque tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from patchctl.patchsets.kinds import jsonpath

#: a block-style YAML mapping key: indentation, then a plain or quoted key, a colon and a space or the end
_YAML_KEY = re.compile(r"""^( *)(?:"([^"]*)"|'([^']*)'|([^\s#'"\-][^#]*?|-[^\s#][^#]*?))\s*:(?:\s|$)""")
_BLOCK_SCALAR = re.compile(r":\s*[|>][-+0-9]*\s*(#.*)?$")
_TOML_TABLE = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
_TOML_ARRAY_TABLE = re.compile(r"^\s*\[\[\s*([^\[\]]+?)\s*\]\]\s*(#.*)?$")
_TOML_KEY = re.compile(
    r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*="""
)


@dataclass(frozen=True)
class Node:
    """One key of the document and the lines that hold it."""

    path: tuple[str, ...]
    #: first line (0-based), its leading comment lines included
    start: int
    #: one past its last line
    end: int
    #: indentation of the key's own line (YAML), 0 for TOML
    indent: int


def dotted(path: tuple[str, ...] | list[str]) -> str:
    """A key path as users write it (``trainer.total_epochs``); a key that holds a dot, a space or
    nothing is quoted, so the path reads back one way only."""
    return ".".join(k if k and not set(k) & set(". \t'\"") else repr(k) for k in path)


def fmt_of(path: str) -> str | None:
    """``yaml``, ``toml`` or ``json`` by the file's name, None for other files."""
    low = path.lower()
    if low.endswith((".yaml", ".yml")):
        return "yaml"
    return "toml" if low.endswith(".toml") else "json" if low.endswith(".json") else None


def nodes(lines: list[str], fmt: str) -> list[Node]:
    if fmt == "json":
        return [Node(m.path, m.start, m.end, m.indent) for m in jsonpath.addressable(jsonpath.members(lines))]
    return _yaml(lines) if fmt == "yaml" else _toml(lines)


def piece(lines: list[str], node: Node, fmt: str, *, comments: bool = True) -> str:
    """A key's lines as config-key carries them: its own indentation off, and for JSON without the
    comma after it (which depends on what follows, not on the key). ``comments=False`` leaves
    out the comment lines above the key."""
    start = node.start
    while not comments and start < node.end - 1 and lines[start].lstrip().startswith("#"):
        start += 1
    text = dedent(lines[start : node.end], node.indent)
    if fmt != "json":
        return text
    body = text.rstrip()
    return (body[:-1] if body.endswith(",") else body) + text[len(body) :]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _blank(line: str) -> bool:
    return not line.strip()


def _leading_comments(lines: list[str], at: int, indent: int | None) -> int:
    """The first line of the comment lines directly above ``at`` (same indentation for YAML)."""
    start = at
    while (
        start > 0
        and lines[start - 1].lstrip().startswith("#")
        and (indent is None or _indent(lines[start - 1]) == indent)
    ):
        start -= 1
    return start


def _yaml(lines: list[str]) -> list[Node]:
    out: list[Node] = []
    stack: list[tuple[int, str]] = []
    skip_deeper_than: int | None = None
    for i, line in enumerate(lines):
        if _blank(line) or line.lstrip().startswith("#"):
            continue
        ind = _indent(line)
        if skip_deeper_than is not None:
            if ind > skip_deeper_than:
                continue  # the text of a block scalar (key: |) is not keys
            skip_deeper_than = None
        m = _YAML_KEY.match(line)
        if not m or line.startswith("---"):
            continue
        key = next(g for g in m.groups()[1:] if g is not None)
        while stack and stack[-1][0] >= ind:
            stack.pop()
        stack.append((ind, key))
        # a list may sit at the key's own indentation (key:\n- a\n- b) and is still its value
        opened = not line[m.end() :].split("#", 1)[0].strip()
        end = i + 1
        for j in range(i + 1, len(lines)):
            if _blank(lines[j]):
                continue
            deeper = _indent(lines[j]) > ind
            if not deeper and not (opened and _indent(lines[j]) == ind and lines[j].lstrip().startswith("-")):
                break
            end = j + 1
        out.append(Node(tuple(k for _, k in stack), _leading_comments(lines, i, ind), end, ind))
        if _BLOCK_SCALAR.search(line.rstrip("\r\n")):
            skip_deeper_than = ind
    return out


def _toml_key(raw: str) -> tuple[str, ...]:
    return tuple(part.strip().strip("\"'") for part in re.findall(r"""[A-Za-z0-9_-]+|"[^"]*"|'[^']*'""", raw))


def _toml(lines: list[str]) -> list[Node]:
    out: list[Node] = []
    table: tuple[str, ...] = ()
    arrays: dict[tuple[str, ...], int] = {}
    table_at: int | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        arr, tab = _TOML_ARRAY_TABLE.match(line), _TOML_TABLE.match(line)
        if arr or tab:
            if table_at is not None:
                out.append(_table_node(lines, table, table_at, i))
            if arr:
                name = _toml_key(arr.group(1))
                arrays[name] = arrays.get(name, 0) + 1
                table = (*name[:-1], f"{name[-1]}[[{arrays[name]}]]")
            else:
                table = _toml_key(tab.group(1)) if tab else ()
            table_at = i
            i += 1
            continue
        m = _TOML_KEY.match(line)
        if m:
            end = _toml_value_end(lines, i, line[m.end() :])
            out.append(Node((*table, *_toml_key(m.group(1))), _leading_comments(lines, i, None), end, 0))
            i = end
            continue
        i += 1
    if table_at is not None:
        out.append(_table_node(lines, table, table_at, len(lines)))
    return out


def _table_node(lines: list[str], table: tuple[str, ...], at: int, nxt: int) -> Node:
    end = _leading_comments(lines, nxt, None) if nxt < len(lines) else nxt
    while end > at + 1 and _blank(lines[end - 1]):
        end -= 1
    return Node(table, _leading_comments(lines, at, None), end, 0)


def _toml_value_end(lines: list[str], i: int, value: str) -> int:
    """One past the last line of a value that may go on over lines (arrays, inline tables, triple quotes)."""
    text, end = value, i + 1
    while end < len(lines) and (_unclosed(text) or text.count('"""') % 2 or text.count("'''") % 2):
        text += lines[end]
        end += 1
    return end


def _unclosed(text: str) -> bool:
    code = re.sub(r"""("([^"\\]|\\.)*"|'[^']*')""", "", text)
    code = re.sub(r"#.*", "", code)
    return code.count("[") + code.count("{") > code.count("]") + code.count("}")


def dedent(lines: list[str], indent: int) -> str:
    """A key's lines with its own indentation taken off, so it can be put back at another depth."""
    return "".join(ln[indent:] if _indent(ln) >= indent else ln.lstrip(" ") for ln in lines)


def indent_text(text: str, indent: int) -> list[str]:
    return [(" " * indent + ln) if ln.strip() else ln for ln in text.splitlines(keepends=True)]


def child_indent(all_nodes: list[Node], parent: tuple[str, ...]) -> int | None:
    """The indentation of ``parent``'s existing children, None when it has none."""
    return next((n.indent for n in all_nodes if n.path[:-1] == parent and len(n.path) == len(parent) + 1), None)
