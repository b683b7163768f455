"""keyword-rename's edit of a keyword that sits alone on its line, done on the text.

libcst rewrites the call in the general case, but importing it builds some 240 node dataclasses
before anything runs: ``patchctl apply`` took 3x the time of the round before, almost all of it
that import (issue 39). The record's own edit, and every keyword rename captured so far, has the
keyword alone on a line of a call written one argument per line::

        disable_log_requests=engine_args.disable_log_requests,

which is a line-level edit: the old line becomes a tagged comment above the new one. This module
does exactly what the libcst rewrite does in that case, byte for byte (``tests/patchsets/
test_kind_keyword_rename_fast.py`` compares the two on real verl files and generated calls), and
answers None for every other shape, which then goes to libcst as before.
"""

from __future__ import annotations

import ast
import re

from patchctl.patchsets.placement.pyparse import split_lines

#: what may follow the value on its line: an optional comma right after it, trailing blanks, the end of line
_AFTER = re.compile(r"^(?P<comma>,?)(?P<ws>[ \t]*)(?P<eol>\r\n|\n|\r|)$")


def rename_on_its_line(text: str, keyword: ast.keyword, new_keyword: str, new_value: str, tag: str) -> str | None:
    """``text`` with the keyword argument ``keyword`` renamed, its old form kept as a tagged
    comment line above it; None when the argument does not sit alone on one line (libcst's case)."""
    value = keyword.value
    if (
        keyword.arg is None
        or keyword.lineno != keyword.end_lineno
        or value.lineno != keyword.lineno
        or value.end_lineno != keyword.lineno
        or keyword.end_col_offset != value.end_col_offset
        or new_value != new_value.strip()
        or "\n" in new_value
    ):
        return None
    lines = split_lines(text)
    line = lines[keyword.lineno - 1]
    # ast's columns are UTF-8 byte offsets: cut the line as bytes, then decode each part
    raw = line.encode("utf-8")
    indent, rest = raw[: keyword.col_offset].decode("utf-8"), raw[keyword.col_offset :]
    if indent.strip() or not _balanced_above(lines, keyword.lineno):
        return None
    name_end = len(keyword.arg.encode("utf-8"))
    if not rest.startswith(keyword.arg.encode("utf-8")):
        return None
    equal = raw[keyword.col_offset + name_end : value.col_offset].decode("utf-8")
    if equal.strip() != "=":
        return None
    value_src = raw[value.col_offset : value.end_col_offset].decode("utf-8")
    after = _AFTER.match(raw[value.end_col_offset :].decode("utf-8"))
    if after is None:
        return None
    comma, ws, eol = after.group("comma"), after.group("ws"), after.group("eol")
    if eol != "\n":  # libcst ends its added comment line with the module's first newline: CRLF files go there
        return None
    comment = f"{indent}# {keyword.arg}{equal}{value_src}{comma} {tag}{eol}"
    renamed = f"{indent}{new_keyword}{equal}{new_value}{comma}{ws} {tag}{eol}"
    return "".join([*lines[: keyword.lineno - 1], comment, renamed, *lines[keyword.lineno :]])


def _balanced_above(lines: list[str], lineno: int) -> bool:
    """Whether the line above ends where an argument list continues: after ``(`` or ``,`` (with
    blanks), so the keyword line is one argument of a call laid out one per line. A comment or a
    backslash there is left to libcst, which knows where such whitespace belongs."""
    if lineno < 2:
        return False
    above = lines[lineno - 2].rstrip()
    return above.endswith(("(", ",")) and "#" not in above
