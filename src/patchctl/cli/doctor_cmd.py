"""`doctor`: name the known failures in a run's log, with cause, fix and what resolves each."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import click

from patchctl.cli import render
from patchctl.cli.errors import handled
from patchctl.cli.options import NonEmptyPath, json_option
from patchctl.doctor import (
    Diagnosis,
    LogReader,
    Match,
    diagnose,
    load_signatures,
    open_log,
    verl_pins,
)
from patchctl.doctor.metrics import diagnose_metrics, load_report
from patchctl.errors import NoLogGiven

KIND_LABEL = {"patch": "patch", "env": "env", "override": "override", "package": "install", "command": "run"}
#: the label of each finding: the first is the root cause, the others came with it
ROLE = ("root cause", "also")


@click.command("doctor")
@click.argument("log", required=False, type=NonEmptyPath(path_type=Path, allow_dash=True))
@click.option(
    "--signatures",
    "table",
    type=NonEmptyPath(path_type=Path, dir_okay=False),
    default=None,
    help="Another signature table (TOML) instead of the shipped one.",
)
@click.option("--list", "list_only", is_flag=True, help="List the known signatures and exit.")
@click.option(
    "--verl",
    "verl_tree",
    type=NonEmptyPath(path_type=Path, file_okay=False, exists=True),
    default=None,
    help="A verl tree whose pins a version mismatch is compared with (default: the installed verl).",
)
@json_option
@handled
def doctor_cmd(log: Path | None, table: Path | None, list_only: bool, verl_tree: Path | None, as_json: bool) -> int:
    """Match LOG (a file, or - / stdin) against known verl failure signatures; or read the metrics of
    a report.json (or a run directory) that patchctl train or validate wrote.

    Prints the root cause first (the error that ended the run, not the warnings before it; a
    specific cause before a generic one), then what came with it; per finding its evidence line,
    cause, fix and the patch, environment variable, override or command that resolves it.
    Findings a pattern cannot confirm are worded as possible. A gzip, bzip2 or xz log is read as
    it is; a binary file is refused. A report.json's per-step metrics show the failures that print
    no error (reward flat at 0 or constant, entropy collapsed, responses pinned at the maximum length,
    rollout and actor disagreeing, grad norm 0 or exploding, an update that changes nothing, NaN
    steps), each with its likely causes and the check to make. Exit code 0 when the input was read,
    whether or not anything was found.
    """
    signatures = load_signatures(table)
    if list_only:
        if as_json:
            render.emit_json([{"id": s.id, "title": s.title, "source": s.source} for s in signatures])
        else:
            render.table(
                "known failure signatures", ["id", "title", "source"], [[s.id, s.title, s.source] for s in signatures]
            )
        return 0
    if log is not None and (log.is_dir() or log.suffix == ".json"):
        return _metrics(log, as_json)
    if log is None or str(log) == "-":
        if log is None and sys.stdin.isatty():
            raise NoLogGiven()
        raw = getattr(sys.stdin, "buffer", None)  # decode ourselves: logs carry stray bytes
        reader = LogReader(raw if raw is not None else io.BytesIO(sys.stdin.read().encode()), "<stdin>")
    else:
        reader = open_log(log)
    with reader:
        result = diagnose(reader, signatures, reader.source)
    pins = verl_pins(verl_tree) if any(m.versions or m.signature.versions for m in result.matches) else None
    if as_json:
        render.emit_json(
            {
                **result.to_json(),
                "compression": reader.compression,
                "damage": reader.damage,
                "verl_pins": None if pins is None else {"from": pins[0], "requires": list(pins[1])},
            }
        )
    else:
        show(result, pins)
    if reader.damage:
        click.echo(
            f"doctor: {reader.source}: {reader.damage}; the findings above are from the lines before it", err=True
        )
    if reader.lines_cut:
        click.echo(
            f"doctor: {reader.source}: {reader.lines_cut} line(s) over 1 MiB were read as their first MiB and "
            "last 64 KiB",
            err=True,
        )
    return 0


def _metrics(path: Path, as_json: bool) -> int:
    report, steps = load_report(path)
    found = diagnose_metrics(steps)
    if as_json:
        render.emit_json({"source": str(report), "steps": len(steps), "findings": [f.to_json() for f in found]})
        return 0
    if not steps:
        click.echo(
            f"doctor: {report} has no training step: the run ended before its first step; "
            "pass the run's log to find why"
        )
        return 0
    if not found:
        click.echo(
            f"doctor: no failure in the metrics of {report} ({len(steps)} steps): reward, entropy, grad norm, "
            "response length, rollout/actor agreement and the update look as a learning run's do"
        )
        return 0
    for i, f in enumerate(found, 1):
        click.secho(f"{i}. {f.title} [{f.id}]", bold=True)
        _field("metrics:", f.evidence)
        for j, cause in enumerate(f.causes, 1):
            _field("cause:" if j == 1 else "", f"{j}) {cause}")
        _field("check:", f.check)
    click.echo(
        f"doctor: {len(found)} finding(s) in the metrics of {report} ({len(steps)} steps); "
        "the first is the most telling"
    )
    return 0


def show(d: Diagnosis, pins: tuple[str, tuple[str, ...]] | None = None) -> None:
    if not d.matches:
        click.echo(
            f"doctor: no known failure signature in {d.lines} lines of {d.source} ({d.tried} known); "
            "the first Traceback or 'Error' line of the earliest failing process is the place to start"
        )
        return
    for i, m in enumerate(d.matches, 1):
        _finding(i, m, pins)
    root = d.matches[0]
    others = f"; {len(d.matches) - 1} more finding(s) below it" if len(d.matches) > 1 else ""
    click.echo(
        f"doctor: root cause: {root.headline} [{root.signature.id}] at line {root.line} of {d.source} "
        f"({d.lines} lines){others}"
    )


def _finding(i: int, m: Match, pins: tuple[str, tuple[str, ...]] | None) -> None:
    s = m.signature
    role = ROLE[0] if i == 1 else ROLE[1]
    kind = "" if m.fatal else ", in warnings only"
    click.secho(f"{i}. {role}: {m.headline} [{s.id}]  ({m.where}{kind})", bold=True)
    click.echo(f"   {'log:':<10}{m.excerpt}")
    if m.verdict:
        _field("versions:", m.verdict)
    _field("cause:", s.cause)
    _field("fix:", s.fix)
    for kind_, text in m.resolves():
        _field(KIND_LABEL[kind_] + ":", text)
    if s.versions:
        _field("seen:", m.seen or "no package versions in the log")
        if pins is not None:
            _field("pins:", f"{', '.join(pins[1]) or '(none readable)'} ({pins[0]})")


def _field(label: str, text: str) -> None:
    """One labelled line of a finding, folded under its label at the output's width (the log
    excerpt above it is evidence and stays as the log has it)."""
    click.echo(render.fold(text, f"   {label:<10}", " " * 13, limit=render.width()))
