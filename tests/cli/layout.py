"""Checks of terminal output layout: no line wider than the terminal, no broken table box.

Used by the 80-column snapshot tests; a snapshot alone would freeze a broken box as expected.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.cells import cell_len

#: characters where a table's columns meet its borders, in every rich box style patchctl uses
JOINTS = set("┏┳┓┃┡╇┩│└┴┘┌┬┐├┼┤╋┣┫┗┻┛╭╮╰╯")
#: the first character of a line of a table
STARTS = set("┏┃┡│└┌├┣┗╭╰")


def _joints(line: str) -> tuple[int, ...]:
    return tuple(cell_len(line[:i]) for i, ch in enumerate(line) if ch in JOINTS)


def problems(text: str, width: int, exempt: Callable[[str], bool] = lambda line: False) -> list[str]:
    """What is wrong with ``text`` laid out for ``width`` columns: lines too wide (unless
    ``exempt``), trailing blanks, and tables whose lines disagree on where the columns meet."""
    out = []
    block: list[tuple[int, str]] = []
    for n, line in enumerate([*text.splitlines(), ""], 1):
        if cell_len(line) > width and not exempt(line):
            out.append(f"line {n} is {cell_len(line)} columns wide: {line!r}")
        if line != line.rstrip():
            out.append(f"line {n} ends in blanks: {line!r}")
        if line[:1] in STARTS:
            block.append((n, line))
            continue
        if block:
            first = _joints(block[0][1])
            out += [
                f"line {m}: its column borders {_joints(b)} do not line up with line {block[0][0]}'s {first}"
                for m, b in block
                if _joints(b) != first or cell_len(b) != cell_len(block[0][1])
            ]
        block = []
    return out
