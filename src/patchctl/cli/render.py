"""Tables and colours for the terminal; plain text when output is not a TTY."""

from __future__ import annotations

import json
from typing import Any

import click

STYLE = {
    "applied": "green", "already-applied": "cyan", "superseded-upstream": "blue", "not-applicable": "yellow",
    "ambiguous": "red", "conflict": "red", "reverted": "green", "not-applied": "yellow",
    "present": "green", "missing": "red", "modified": "red",
}


def console():  # rich is imported lazily: it costs ~50 ms that --json runs do not need
    from rich.console import Console

    import sys

    # a pipe or a CI log has no width; rich would assume 80 and fold every path
    return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 160)


def table(title: str, columns: list[str], rows: list[list[str]], status_col: int | None = None) -> None:
    from rich.table import Table

    t = Table(title=title, title_justify="left", show_lines=False)
    for c in columns:
        t.add_column(c, overflow="fold")
    for row in rows:
        cells = list(row)
        if status_col is not None:
            s = cells[status_col]
            cells[status_col] = f"[{STYLE.get(s, 'white')}]{s}[/]"
        t.add_row(*cells)
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
