"""`doctor`: name the known failures in a run's log, with cause, fix and what resolves each."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import click

from patchctl.cli import render
from patchctl.cli.errors import handled
from patchctl.cli.options import json_option
from patchctl.doctor import Diagnosis, LogReader, diagnose, load_signatures, open_log
from patchctl.errors import NoLogGiven

KIND_LABEL = {"patch": "patch", "env": "env", "override": "override", "package": "install", "command": "run"}


@click.command("doctor")
@click.argument("log", required=False, type=click.Path(path_type=Path, dir_okay=False, allow_dash=True))
@click.option("--signatures", "table", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Another signature table (TOML) instead of the shipped one.")
@click.option("--list", "list_only", is_flag=True, help="List the known signatures and exit.")
@json_option
@handled
def doctor_cmd(log: Path | None, table: Path | None, list_only: bool, as_json: bool) -> int:
    """Match LOG (a file, or - / stdin) against known verl failure signatures.

    Prints, per known failure found, its cause, the fix and the patch, environment variable or
    override that resolves it. A gzip, bzip2 or xz log is read as it is; a binary file is refused.
    Exit code 0 when the log was read, whether or not anything matched.
    """
    signatures = load_signatures(table)
    if list_only:
        if as_json:
            render.emit_json([{"id": s.id, "title": s.title, "source": s.source} for s in signatures])
        else:
            render.table("known failure signatures", ["id", "title", "source"],
                         [[s.id, s.title, s.source] for s in signatures])
        return 0
    if log is None or str(log) == "-":
        if log is None and sys.stdin.isatty():
            raise NoLogGiven()
        raw = getattr(sys.stdin, "buffer", None)  # decode ourselves: logs carry stray bytes
        reader = LogReader(raw if raw is not None else io.BytesIO(sys.stdin.read().encode()), "<stdin>")
    else:
        reader = open_log(log)
    with reader:
        result = diagnose(reader, signatures, reader.source)
    if as_json:
        render.emit_json({**to_json(result), "compression": reader.compression, "damage": reader.damage})
    else:
        show(result)
    if reader.damage:
        click.echo(f"doctor: {reader.source}: {reader.damage}; the findings above are from the lines before it",
                   err=True)
    return 0


def to_json(d: Diagnosis) -> dict[str, object]:
    return {"source": d.source, "lines": d.lines, "signatures": d.tried, "matches": [
        {"id": m.signature.id, "title": m.signature.title, "first_line": m.first_line, "count": m.count,
         "excerpt": m.excerpt, "cause": m.signature.cause, "fix": m.signature.fix,
         "resolves": {k: list(v) for k, v in vars(m.signature.resolves).items() if v},
         "source": m.signature.source}
        for m in d.matches]}


def show(d: Diagnosis) -> None:
    if not d.matches:
        click.echo(f"doctor: no known failure signature in {d.lines} lines of {d.source} ({d.tried} known); "
                   "the first Traceback or 'Error' line of the earliest failing process is the place to start")
        return
    for i, m in enumerate(d.matches, 1):
        s = m.signature
        times = f", {m.count} lines" if m.count > 1 else ""
        click.secho(f"{i}. {s.title} [{s.id}]  (line {m.first_line}{times})", bold=True)
        click.echo(f"   {'log:':<10}{m.excerpt}")
        click.echo(f"   {'cause:':<10}{s.cause}")
        click.echo(f"   {'fix:':<10}{s.fix}")
        for kind, text in s.resolves.items():
            click.echo(f"   {KIND_LABEL[kind] + ':':<10}{text}")
    click.echo(f"doctor: {len(d.matches)} known failure(s) in {d.lines} lines of {d.source}")
