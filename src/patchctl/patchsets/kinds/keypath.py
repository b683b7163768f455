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


def under(path: tuple[str, ...]) -> str:
    """Where a key path puts a line, in words: ``key trainer`` or ``the top level``."""
    return f"key {dotted(path)}" if path else "the top level"


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


def key_line(lines: list[str], node: Node) -> int:
    """The line (0-based) of a node's key itself, below its leading comments."""
    at = node.start
    while at < node.end - 1 and lines[at].lstrip().startswith("#"):
        at += 1
    return at


def holders(lines: list[str], all_nodes: list[Node]) -> list[int | None]:
    """For each line, the line of the key whose value holds it (None: the top level). A key's
    own line is held by its parent, so a line's holder is the key it sits under."""
    out: list[int | None] = [None] * len(lines)
    for n in all_nodes:  # in file order: a nested key comes after its parent and overrides it
        at = key_line(lines, n)
        for i in range(at + 1, n.end):
            out[i] = at
    return out


def parent_at(lines: list[str], at: int) -> tuple[str, ...]:
    """The key path a YAML line sits under (``()``: the top level)."""
    all_nodes = nodes(lines, "yaml")
    by_line = {key_line(lines, n): n.path for n in all_nodes}
    held = holders(lines, all_nodes)[at]
    return () if held is None else by_line[held]


def content(line: str) -> bool:
    """A line that is neither blank nor a comment: one whose place in the document matters."""
    return bool(line.strip()) and not line.lstrip().startswith("#")


def moved(old: list[str], new: list[str]) -> tuple[int, tuple[str, ...], tuple[str, ...]] | None:
    """The first of upstream's YAML lines that a change moves under another key, as (its line in
    ``new``, 0-based; the key path it sat under; the one it would sit under); None when none moves.

    The change is what differs between the two texts, cut out by their common first and last
    lines; the lines after it are upstream's, and each must keep the key it sat under: the same
    line of upstream's, or one the change itself wrote where it replaced the one they sat under
    (a renamed parent). A hunk placed in the middle of a section breaks that (issue 38): the
    section's next keys would belong to whatever the hunk left open.
    """
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    old_end, new_end = len(old) - tail, len(new) - tail
    shift = new_end - old_end
    old_nodes, new_nodes = nodes(old, "yaml"), nodes(new, "yaml")
    was, now = holders(old, old_nodes), holders(new, new_nodes)
    for i in range(old_end, len(old)):
        if not content(old[i]):
            continue
        h_old, h_new = was[i], now[i + shift]
        if h_old is not None and head <= h_old < old_end:  # under a line the change replaced
            fine = h_new is not None and head <= h_new < new_end
        else:
            fine = h_new == (h_old if h_old is None or h_old < head else h_old + shift)
        if not fine:
            paths_old = {key_line(old, n): n.path for n in old_nodes}
            paths_new = {key_line(new, n): n.path for n in new_nodes}
            return (
                i + shift,
                () if h_old is None else paths_old[h_old],
                () if h_new is None else paths_new[h_new],
            )
    return None
