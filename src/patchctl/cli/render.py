"""Tables and colours for the terminal; plain text when output is not a TTY."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from patchctl.cli.echo import echo
from patchctl.quoting import printable, quote_path

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

__all__ = [
    "STYLE",
    "console",
    "emit_json",
    "fits",
    "printable",
    "progress_line",
    "quote_path",
    "show",
    "table",
    "width",
]

#: the width of output that reaches no terminal at all (a CI log, a file from cron): wide enough
#: that a path or a matrix row stays on one line, since nobody's window folds it
NO_TERMINAL_WIDTH = 160
#: spaces (and the colour resets after them) at the end of a line: rich pads to the table's width
_TRAILING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)

STYLE = {
    "applied": "green",
    "already-applied": "cyan",
    "superseded-upstream": "blue",
    "not-applicable": "yellow",
    "ambiguous": "red",
    "conflict": "red",
    "reverted": "green",
    "not-applied": "yellow",
    "present": "green",
    "missing": "red",
    "modified": "red",
}


def width() -> int:
    """The columns output is laid out for: ``COLUMNS`` when set, else the size of whichever of
    stdout, stderr or stdin is a terminal (``patchctl ... | less`` still has one on stderr, and
    ``patchctl ... 2>&1 | less`` on stdin: the pager shows it in that same window), else
    :data:`NO_TERMINAL_WIDTH`."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    for fd in (1, 2, 0):
        try:
            return os.get_terminal_size(fd).columns
        except OSError:
            continue
    return NO_TERMINAL_WIDTH


def on_screen() -> bool:
    """Whether the output is laid out for a person's window (``COLUMNS`` set, or a terminal on
    stdout, stderr or stdin), as :func:`width` reads it: long lines are then folded under their
    label; a log or a pipe into grep keeps one line per finding."""
    return os.environ.get("COLUMNS", "").isdigit() or any(os.isatty(fd) for fd in (1, 2, 0))


def console() -> Console:  # rich is imported lazily: it costs ~50 ms that --json runs do not need
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False, width=width())


def show(renderable: RenderableType) -> None:
    """Print ``renderable`` without the spaces rich pads its lines with: a piped table is then
    no wider than its content, and ``| tee`` or a diff of two logs shows no trailing blanks."""
    out = console()
    with out.capture() as captured:
        out.print(renderable)
    echo(_TRAILING.sub(r"\1", captured.get()), nl=False, color=out.is_terminal and not out.no_color)


def fits(renderable: RenderableType, folded: bool = False) -> bool:
    """True when ``renderable`` needs no folding at the current :func:`width`; with ``folded``, when
    its foldable cells folded keep it inside the width: rich squeezes a table that does not fit,
    and where its unfoldable columns alone are too wide it cuts the box's right edge off, so the
    table is laid out and every line must still end on its box's right border."""
    from rich.measure import Measurement

    out = console()
    if folded:
        with out.capture() as captured:
            out.print(renderable)
        lines = [ln.rstrip() for ln in captured.get().splitlines() if ln.strip()]
        return all(ln[-1:] in "┓┃┩│┘┐┤╮╯" for ln in lines)
    wide = out.options.update(max_width=1 << 16)  # measured unbounded: the console's width would clamp it
    return Measurement.get(out, wide, renderable).maximum <= out.width


def table(
    title: str,
    columns: list[str],
    rows: list[list[str]],
    status_col: int | None = None,
    styles: Mapping[str, str] = STYLE,
    drop_to_fit: int | None = None,
) -> bool:
    """Cells are plain text, never rich markup, with control characters escaped: a reason or a
    path from a tree must not style the table, break it (``[/]``), or add a line to it. The
    ``status_col`` cell is coloured by ``styles``. The title is a line of its own: rich would
    fold it to the table's width, mid-path. Column ``drop_to_fit`` is left out where the table
    would not fit the width with it; True then, and the caller prints that text whole below."""
    plain = _plain_table(columns, rows)
    if plain is not None:
        echo(printable(title))
        echo(plain, nl=False)  # box drawing and printable ASCII: no colour code to strip
        return False
    from rich.table import Table
    from rich.text import Text

    def build(keep: list[int]) -> Table:
        t = Table(show_lines=False)
        for i in keep:  # the row's name (a patch, a check, a host) and its status are never folded
            t.add_column(columns[i], overflow="fold", no_wrap=i in (0, status_col))
        for row in rows:
            t.add_row(
                *(Text(printable(row[i]), style=styles.get(row[i], "white") if i == status_col else "") for i in keep)
            )
        return t

    t = build(list(range(len(columns))))
    dropped = drop_to_fit is not None and not fits(t)
    if dropped:
        t = build([i for i in range(len(columns)) if i != drop_to_fit])
    echo(printable(title))
    show(t)
    return dropped


#: what a cell or header may hold for :func:`_plain_table`: printable ASCII, one character a
#: column, and no markup or emoji code (a header is read as rich markup)
_PLAIN_CELL = re.compile(r"[ -~]*")
_PLAIN_HEADER = re.compile(r"[ -9;-Z^-~]*")


def _plain_table(columns: list[str], rows: list[list[str]]) -> str | None:
    """The table exactly as rich lays it out (its heavy-headed box), without importing rich, when
    the output reaches no terminal and the table fits the width unfolded; else None.

    rich's import, console and layout were about a quarter of a piped ``patchctl verify``. Only
    the simplest case is drawn here, byte for byte what rich draws without colours: no colour at
    all (rich would colour for FORCE_COLOR or TTY_COMPATIBLE), every cell one line of printable
    ASCII without spaces at its ends, at least one row, nothing to fold or drop. Anything else
    goes to rich, and tests/cli/test_plain_table.py holds the two side by side.
    """
    if not rows or "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ:
        return None
    try:
        if sys.stdout.isatty():
            return None
    except ValueError:  # a closed stdout: rich's problem to report
        return None
    if any(not _PLAIN_HEADER.fullmatch(c) or c != c.strip() for c in columns):
        return None
    cells = [[printable(c) for c in row] for row in rows]
    if any(len(row) != len(columns) for row in cells):
        return None
    if any(not _PLAIN_CELL.fullmatch(c) or c != c.strip() for row in cells for c in row):
        return None
    widths = [max(len(c) for c in col) for col in zip(columns, *cells, strict=True)]
    if sum(widths) + 3 * len(widths) + 1 > width():
        return None

    def line(left: str, fill: str, mid: str, right: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + right

    def row(values: list[str], bar: str) -> str:
        return bar + bar.join(f" {v.ljust(w)} " for v, w in zip(values, widths, strict=True)) + bar

    out = [line("┏", "━", "┳", "┓"), row(columns, "┃"), line("┡", "━", "╇", "┩")]
    out += [row(r, "│") for r in cells]
    out.append(line("└", "─", "┴", "┘"))
    return _TRAILING.sub(r"\1", "\n".join(out) + "\n")


def emit_json(doc: Any) -> None:
    echo(json.dumps(doc, indent=2))


def progress_line(p: Any) -> str:
    """``step 12/40  reward 0.512  loss -0.0123  0.15 s/step  34 s``: train's and validate's live line."""
    parts = [f"step {p.step}" + (f"/{p.total}" if p.total else "")]
    if p.reward is not None:
        parts.append(f"reward {p.reward:.3f}")
    if p.loss is not None:
        parts.append(f"loss {p.loss:.4f}")
    if p.seconds_per_step is not None:
        parts.append(f"{p.seconds_per_step:.2f} s/step")
    parts.append(f"{p.elapsed:.0f} s")
    return "  ".join(parts)


def fold(text: str, first: str, rest: str, limit: int = 100) -> str:
    """``first + text`` folded at the output's width (at most ``limit``), later lines indented by
    ``rest``: a long value stays under its label instead of wrapping at the terminal's left edge.
    Words are never split, so a long path or option stays whole (and copyable) on a line of its own."""
    import textwrap

    return textwrap.fill(
        " ".join(text.split()),
        min(width(), limit),
        initial_indent=first,
        subsequent_indent=rest,
        break_on_hyphens=False,
        break_long_words=False,
    )
