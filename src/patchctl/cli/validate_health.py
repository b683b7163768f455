"""validate's health checks on the command line: ``--checks``, and their tables (the stack host
by host, storage, all-reduce busbw); kept apart from validate_cmd.py so it stays the run's."""

from __future__ import annotations

from typing import Any

import click

from patchctl.cli import render


def _parse(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...] | None:
    from patchctl.validate.checks.runner import parse

    try:
        return None if value is None else parse(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


checks_option = click.option(
    "--checks",
    "checks",
    default=None,
    metavar="NAMES",
    callback=_parse,
    help="Health checks to run before Ray, comma-separated: stack, storage, interconnect (stack always runs; "
    "--profile health runs all three and no training).",
)


def checks_for(profile: str, asked: tuple[str, ...] | None) -> tuple[str, ...]:
    """What runs: the ones asked for, else all of them for ``health``, else the stack table alone."""
    from patchctl.validate.checks.runner import NAMES, PROFILE

    return asked or (NAMES if profile == PROFILE else ("stack",))


HEALTH_STYLE = {**render.STYLE, "pass": "green", "warn": "yellow", "fail": "red", "shared": "cyan"}


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1 << 10 else f"{n} B"


def show(health: Any) -> None:
    from patchctl.validate.checks.stack import COLUMNS

    if health is None:
        return
    st = health.stack
    if st is not None:
        render.table("stack (found, not imported)", ["", *st.hosts], [[COLUMNS[k], *v] for k, v in st.rows.items()])
        for line in st.mismatches:
            click.echo(f"  MISMATCH: {line}")
        for line in st.warnings:
            click.echo(f"  warning: {line}")
        if st.compared:
            render.table(
                "stack vs the earlier run",
                ["", "this run", "earlier run"],
                [[COLUMNS[k], a, b] for k, (a, b) in st.compared.items()],
            )
    if health.storage:
        render.table(
            f"storage ({health.seconds.get('storage', 0):.1f} s)",
            ["host", "dir", "path", "status", "write MB/s", "read MB/s", "size", "method / note"],
            [
                [
                    r.host,
                    r.dir,
                    r.path,
                    r.status,
                    "-" if r.write_mbps is None else f"{r.write_mbps:.0f}",
                    "-" if r.read_mbps is None else f"{r.read_mbps:.0f}",
                    _size(r.bytes) if r.bytes else "-",
                    "; ".join(x for x in (r.method, r.note) if x),
                ]
                for r in health.storage
            ],
            3,
            HEALTH_STYLE,
        )
    ic = health.interconnect
    if ic is not None:
        render.table(
            f"all-reduce busbw, {ic.backend} ({ic.seconds:.1f} s)",
            ["group", "hosts", "ranks", "busbw GB/s", "status", "expected GB/s", "largest size", "note"],
            [
                [
                    g.kind,
                    " <-> ".join(g.hosts),
                    str(g.ranks),
                    f"{g.busbw:.3g}",
                    g.status,
                    f"{g.expected:g} ({g.source})" if g.expected else f"{g.source or 'no figure'}; peers only",
                    _size(g.sizes[-1]["bytes"]) if g.sizes else "-",
                    g.note,
                ]
                for g in ic.groups
            ],
            4,
            HEALTH_STYLE,
        )
        for line in ic.findings:
            click.echo(f"  {line}")
