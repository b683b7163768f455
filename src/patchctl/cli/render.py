"""Tables and colours for the terminal; plain text when output is not a TTY."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from patchctl.quoting import printable, quote_path

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["STYLE", "console", "emit_json", "printable", "progress_line", "quote_path", "table"]

STYLE = {
    "applied": "green", "already-applied": "cyan", "superseded-upstream": "blue", "not-applicable": "yellow",
    "ambiguous": "red", "conflict": "red", "reverted": "green", "not-applied": "yellow",
    "present": "green", "missing": "red", "modified": "red",
}


def console() -> Console:  # rich is imported lazily: it costs ~50 ms that --json runs do not need
    import sys

    from rich.console import Console

    # a pipe or a CI log has no width; rich would assume 80 and fold every path
    return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 160)


def table(title: str, columns: list[str], rows: list[list[str]], status_col: int | None = None,
          styles: Mapping[str, str] = STYLE) -> None:
    """Cells are plain text, never rich markup, with control characters escaped: a reason or a
    path from a tree must not style the table, break it (``[/]``), or add a line to it. The
    ``status_col`` cell is coloured by ``styles``."""
    from rich.table import Table
    from rich.text import Text

    t = Table(title=printable(title), title_justify="left", show_lines=False)
    for c in columns:
        t.add_column(c, overflow="fold")
    for row in rows:
        t.add_row(*(Text(printable(cell), style=styles.get(cell, "white") if i == status_col else "")
                    for i, cell in enumerate(row)))
    console().print(t)


def emit_json(doc: Any) -> None:
    click.echo(json.dumps(doc, indent=2))


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
