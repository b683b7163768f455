"""`matrix`: the patchsets applied to many upstream versions, as a patch x version table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from patchctl.cli import render
from patchctl.cli.errors import handled
from patchctl.cli.options import NonEmptyPath, config_option, json_option, patchset_option
from patchctl.config import load as load_config
from patchctl.matrix.columns import parse_versions, repo_root
from patchctl.matrix.run import Column, Matrix, run_matrix
from patchctl.patchsets.loader import load_patchsets
from patchctl.patchsets.model import Outcome


@click.command("matrix")
@click.option(
    "--versions",
    "versions",
    required=True,
    metavar="V1,V2,...",
    help="Comma-separated, oldest first: releases (0.6.1 or verl==0.6.1), names from patchctl.toml "
    "[targets] (a checkout is read at its HEAD commit); with --repo, git refs (commits, branches, "
    "tags) of that checkout, and releases written verl==X.Y.Z.",
)
@click.option(
    "--repo",
    "repo",
    type=NonEmptyPath(path_type=Path, file_okay=False),
    default=None,
    help="A local verl git checkout whose refs --versions names (read from its blobs; not changed). Its history "
    "also carries each patch that does not fit a version along upstream's commits from the patch's base "
    "(captured_against), following renames and moved functions (--no-history: off).",
)
@click.option(
    "--no-history",
    "no_history",
    is_flag=True,
    help="With --repo: place the patches on each version directly, without walking upstream's history.",
)
@patchset_option
@click.option(
    "--jobs",
    "-j",
    "jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Scratch copies worked on at once (default: the CPUs available).",
)
@json_option
@click.option("--markdown", "as_markdown", is_flag=True, help="Print a GitHub Markdown table instead of a table.")
@click.option("--diff", "show_diff", is_flag=True, help="Print the diff behind each conflict under its line.")
@config_option
@handled
def matrix_cmd(
    versions: str,
    repo: Path | None,
    no_history: bool,
    patchsets: tuple[str, ...],
    jobs: int | None,
    as_json: bool,
    as_markdown: bool,
    show_diff: bool,
    config: Path | None,
) -> int:
    """Apply the patchsets to each version in a scratch copy; show the outcome per patch and version.

    Each version is unpacked pristine (a release from its cached sdist, a ref from its blobs)
    into a temporary directory, patched there, and deleted; nothing else is written, apart from
    downloading releases not cached yet. Per patch the table also names the first version, in the
    order given, where it is superseded-upstream, and the versions where it is conflict or
    ambiguous. Exit code 1 when any cell is conflict or ambiguous.

    \b
    patchctl matrix --versions 0.4.1,0.5.0,0.6.0,0.6.1,0.7.0
    patchctl matrix --repo ~/src/verl --versions v0.6.1,main,verl==0.7.0 --markdown
    """
    if as_json and as_markdown:
        raise click.UsageError("pass at most one of --json and --markdown")
    sets = load_patchsets(patchsets)
    columns = parse_versions(versions, repo, load_config(config).targets)
    history = repo_root(repo) if repo is not None and not no_history else None
    matrix = run_matrix(columns, sets, jobs, history)
    if as_json:
        render.emit_json(matrix.to_json())
    elif as_markdown:
        click.echo(markdown(matrix), nl=False)
    else:
        _show(matrix, show_diff)
    return 0 if matrix.ok else 1


#: the longest version label a compact table shows as it is; longer ones (``v0.2.0.post2``) stood
#: one character per line at 80 columns, so they become ``#1``, ``#2`` ... with a key below
SHORT_LABEL = 7


def short_labels(matrix: Matrix) -> dict[str, str]:
    """Each column's label as a compact table shows it: itself, or ``#N`` when any label is long."""
    labels = [c.source.label for c in matrix.columns]
    if all(len(label) <= SHORT_LABEL for label in labels):
        return {label: label for label in labels}
    return {label: f"#{i}" for i, label in enumerate(labels, 1)}


def _header(matrix: Matrix, compact: bool = False) -> list[str]:
    summary = ["sup", "fail"] if compact else ["superseded from", "conflict/ambiguous"]
    short = short_labels(matrix) if compact else {}
    return ["patch", *(short.get(c.source.label, c.source.label) for c in matrix.columns), *summary]


def _row(matrix: Matrix, row: tuple[str, str], style: bool, compact: bool = False) -> list[str]:
    cells = [matrix.cell(row, c).status.value for c in matrix.columns]
    if style:
        cells = [f"[{render.STYLE.get(s, 'white')}]{CODES.get(s, s) if compact else s}[/]" for s in cells]
    short = short_labels(matrix) if compact else {}
    first = matrix.first_superseded(row)
    fails = [short.get(label, label) for label in matrix.problems(row)]
    # compact: how many versions fail (the cells and the lines below the table say which)
    listed = (str(len(fails)) if fails else "-") if compact else (", ".join(fails) or "-")
    return [matrix.name(row), *cells, short.get(first, first) if first else "-", listed]


def markdown(matrix: Matrix) -> str:
    """A GitHub table, as the README shows the outcomes of the uky patchset."""
    header = _header(matrix)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_row(matrix, row, False)) + " |" for row in matrix.rows]
    return "\n".join(lines) + "\n"


#: a cell's outcome in the compact table (when the full words do not fit the width), with a legend
CODES = {
    "applied": "app",
    "already-applied": "had",
    "superseded-upstream": "sup",
    "not-applicable": "n/a",
    "ambiguous": "AMB",
    "conflict": "CONF",
    "held-back": "held",
}


def _table(matrix: Matrix, compact: bool, tight: bool = False) -> Any:
    """The outcome table; ``tight`` drops the cells' padding, the last resort before a box overflows."""
    from rich.table import Table

    table = Table(padding=(0, 0) if tight else (0, 1))
    header = _header(matrix, compact)
    for i, name in enumerate(header):
        if not compact:
            table.add_column(name, no_wrap=i == 0, overflow="fold")  # a folded patch id reads as two
        elif i == 0:  # a long id folds, but never below a width it still reads at
            table.add_column(name, overflow="fold", min_width=12, max_width=max(16, render.width() // 3))
        else:  # codes, short labels and counts stay whole
            table.add_column(name, no_wrap=True)
    for row in matrix.rows:
        table.add_row(*_row(matrix, row, True, compact))
    return table


def legend(matrix: Matrix) -> str:
    """``app applied, sup superseded-upstream, ...``: the codes this matrix uses, in CODES' order."""
    used = {matrix.cell(row, c).status.value for row in matrix.rows for c in matrix.columns}
    codes = ", ".join(f"{code} {word}" for word, code in CODES.items() if word in used)
    return f"legend: {codes}; sup: first version superseded upstream; fail: how many versions conflict or are ambiguous"


def _show(matrix: Matrix, show_diff: bool = False) -> None:
    """The full words when they fit the width (``COLUMNS``, the terminal, or a log's 160), else
    compact cells and a legend: 15 patches x 4 versions stay 15 rows at 80 columns."""
    import textwrap

    click.echo(f"matrix {' + '.join(matrix.patchsets)} x {len(matrix.columns)} version(s)")
    table = _table(matrix, compact=False)
    if render.fits(table):
        render.show(table)
    else:
        compact = _table(matrix, compact=True)
        render.show(compact if render.fits(compact, folded=True) else _table(matrix, compact=True, tight=True))
        click.echo(textwrap.fill(legend(matrix), render.width(), subsequent_indent="  ", break_on_hyphens=False))
        key = [f"{short} {label}" for label, short in short_labels(matrix).items() if short != label]
        if key:
            click.echo(textwrap.fill("versions: " + ", ".join(key), render.width(), subsequent_indent="  "))
    failed = [
        (row, c)
        for row in matrix.rows
        for c in matrix.columns
        if isinstance(s := matrix.cell(row, c).status, Outcome) and s.is_failure
    ]
    _conflicts(matrix, failed, show_diff)
    if failed:
        click.echo(f"matrix: {len(failed)} cell(s) conflict or ambiguous", err=True)
    else:
        click.echo("matrix: no conflict or ambiguous cell")


def _conflicts(matrix: Matrix, failed: list[tuple[tuple[str, str], Column]], show_diff: bool) -> None:
    """One line per conflict with its reason (the diff under it only with --diff: one patch's
    diff ran over 1,500 lines, issue 27), then each held-back or warned patch with its partner."""
    for row, c in failed:
        cell = matrix.cell(row, c)
        reason = render.printable(cell.reason)
        head = f"{matrix.name(row)} on {c.source.label}: {cell.status.value} in {render.quote_path(cell.path or '-')}: "
        line = head + " ".join(reason.split())
        click.echo(render.fold(line, "", "    ", limit=render.width()) if render.on_screen() else line)
        if show_diff and cell.detail:
            click.echo(cell.detail.rstrip("\n"))
    hidden = sum(1 for row, c in failed if matrix.cell(row, c).detail)
    if hidden and not show_diff:
        click.echo(f"({hidden} diff(s) behind these lines: add --diff to print them)")
    for row in matrix.rows:
        for c in matrix.columns:
            cell = matrix.cell(row, c)
            if cell.status is Outcome.HELD_BACK or "warning: needed by" in cell.reason:
                click.echo(
                    f"{matrix.name(row)} on {c.source.label}: {cell.status.value}: "
                    f"{' '.join(render.printable(cell.reason).split())}"
                )
