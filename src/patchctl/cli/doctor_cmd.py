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
from patchctl.doctor.compare import Comparison, compare, read_log, read_run
from patchctl.doctor.metrics import MetricFinding, diagnose_metrics, load_report
from patchctl.doctor.rundir import RunDir
from patchctl.doctor.rundir import read as read_run_dir
from patchctl.doctor.signatures import Signature
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
@click.option(
    "--healthy",
    type=NonEmptyPath(path_type=Path, exists=True),
    default=None,
    help="A healthy run's log or report.json to compare with: show only what differs.",
)
@json_option
@handled
def doctor_cmd(
    log: Path | None, table: Path | None, list_only: bool, verl_tree: Path | None, healthy: Path | None, as_json: bool
) -> int:
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

    A run directory is read whole: its report's metrics, the root cause of train.log and of each
    host's logs (hosts/HOST/), where each rank waited when the run stopped making progress (py-spy
    stacks in stacks/, NCCL flight recorder dumps in nccl_trace/, ray-status.txt) with the rank the
    others wait for, and the host that differs from its peers (versions, driver, CUDA, NCCL
    transport, Xid/ECC errors, GPU clocks, step time).

    With --healthy OLD (a log, report.json or run directory of a run that worked), shows what
    differs instead: the lines and warnings only the failed run printed, each with its phase
    (startup, ray, workers, training, validation, teardown) and seconds into it, the phases it never
    reached, and the settings and package versions that differ; two reports also get their key
    metrics side by side.
    """
    if healthy is not None and not list_only:
        return _compare(log, healthy, as_json)
    signatures = load_signatures(table)
    if list_only:
        if as_json:
            render.emit_json([{"id": s.id, "title": s.title, "source": s.source} for s in signatures])
        else:
            render.table(
                "known failure signatures", ["id", "title", "source"], [[s.id, s.title, s.source] for s in signatures]
            )
        return 0
    if log is not None and log.is_dir():
        return _run_dir(log, signatures, as_json)
    if log is not None and log.suffix == ".json":
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


def _compare(log: Path | None, healthy: Path, as_json: bool) -> int:
    if log is None or str(log) == "-":
        if log is None and sys.stdin.isatty():
            raise NoLogGiven()
        raw = getattr(sys.stdin, "buffer", None)
        with LogReader(raw if raw is not None else io.BytesIO(sys.stdin.read().encode()), "<stdin>") as reader:
            failed = read_log(reader, reader.source)
    else:
        failed = read_run(log)
    c = compare(failed, read_run(healthy))
    if as_json:
        render.emit_json(c.to_json())
    else:
        show_comparison(c)
    return 0


def show_comparison(c: Comparison) -> None:
    """The differences, each section only when it has any; every line fits the output's width."""
    limit = min(render.width(), 100)
    click.echo("doctor: what the failed run has and the healthy one has not")
    click.echo(f"  failed:  {c.failed}\n  healthy: {c.healthy}")  # a path stays whole, however long
    if c.missing_phases:
        failed = c.phases[0]
        _field(
            "phases:",
            f"the failed run stopped in {failed[-1]}; the healthy one went on to " + ", ".join(c.missing_phases),
        )
    for title, shown, total in (
        ("warnings and errors only in the failed run", c.warnings, c.warnings_total),
        ("lines only in the failed run", c.others, c.others_total),
    ):
        if total:
            more = f", first {len(shown)} shown" if total > len(shown) else ""
            click.secho(f"{title} ({total}{more}):", bold=True)
            for line in shown:
                head = f"  {line.number:>5} [{line.where()}] "
                times = f" (x{line.count})" if line.count > 1 else ""
                # a log is untrusted: its control characters (an OSC title, a cursor move) are escaped
                click.echo(_wrap(head, render.printable(line.text) + times, limit))
    for title, rows in (("settings that differ", c.settings), ("versions that differ", c.versions)):
        if rows:
            click.secho(f"{title} ({len(rows)}):", bold=True)
            for key, old, new in rows:
                text = f"{_value(old)} (healthy) -> {_value(new)} (failed)"
                click.echo(render.fold(text, f"  {key}: ", "      ", limit=limit))
    if c.metrics and c.steps is not None:
        click.secho(f"key metrics, mean over steps (healthy {c.steps[0]} steps, failed {c.steps[1]}):", bold=True)
        click.echo(f"  {'metric':<26}{'healthy':>14}{'failed':>14}")
        for name, before, after in c.metrics:
            click.echo(f"  {name:<26}{_number(before):>14}{_number(after):>14}")
    if not c.differs and c.metrics:
        click.echo("doctor: no setting or version differs; the metrics above are where the runs part")
    elif not c.differs:
        click.echo(
            render.fold(
                "every line (its timestamps, pids, ids and numbers aside), setting and version of the failed "
                "run is also in the healthy one",
                "doctor: no difference: ",
                "  ",
                limit=limit,
            )
        )


def _wrap(head: str, text: str, limit: int, lines: int = 2) -> str:
    """``head`` and ``text`` in at most ``lines`` lines of ``limit`` columns, later ones indented
    under the text's start, the rest of a longer text cut at "...": a log line is evidence, so its
    start (the message) matters, not its tail of numbers."""
    import textwrap

    width = max(limit - len(head), 20)
    parts = textwrap.wrap(text, width, max_lines=lines, placeholder=" ...", drop_whitespace=True) or [""]
    return head + ("\n" + " " * len(head)).join(parts)


def _value(v: str | None) -> str:
    """A setting's or version's value as printed: escaped, since it comes from an untrusted log."""
    return "(not set)" if v is None else (render.printable(v) or '""')


def _number(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def _metrics(path: Path, as_json: bool) -> int:
    report, steps = load_report(path)
    found = diagnose_metrics(steps)
    if as_json:
        render.emit_json({"source": str(report), "steps": len(steps), "findings": [f.to_json() for f in found]})
        return 0
    _show_metrics(report, steps, found)
    return 0


def _run_dir(path: Path, signatures: list[Signature], as_json: bool) -> int:
    """A run directory: its report's metrics, every log's root cause, where a stalled run's ranks
    waited, and the host that differs from its peers."""
    # a report.json that is no report is a one-line error naming it, before anything is read
    report, steps = load_report(path) if (path / "report.json").is_file() else (None, [])
    run = read_run_dir(path, signatures)
    found = diagnose_metrics(steps) if report is not None else []
    if as_json:
        render.emit_json(
            {
                "source": str(report or path),
                "steps": len(steps),
                "findings": [f.to_json() for f in found],
                "logs": [
                    {"source": d.source, "lines": d.lines, "findings": [m.to_json() for m in d.matches[:3]]}
                    for d in run.logs
                ],
                "progress": run.progress.to_json() if run.progress else None,
                "hang": run.hang.to_json() if run.hang else None,
                "nodes": [f.to_json() for f in run.nodes],
                "skipped": [{"file": f, "why": w} for f, w in run.skipped],
            }
        )
        return 0
    if report is not None:
        _show_metrics(report, steps, found)
    for d in run.logs:
        if d.matches:
            root = d.matches[0]
            click.secho(f"{d.source}: {root.headline} [{root.signature.id}] (line {root.line})", bold=True)
            click.echo(f"   {'log:':<10}{root.excerpt}")
            _field("fix:", root.signature.fix)
    logs_clean = [d.source for d in run.logs if not d.matches]
    if logs_clean:
        _field("logs:", f"no known failure signature in {', '.join(logs_clean[:8])}")
    for f, why in run.skipped:
        _field("skipped:", f"{f}: {why}")
    _show_hang(run)
    if run.nodes:
        click.secho(f"hosts that differ from their peers ({len(run.nodes)}):", bold=True)
        for n in run.nodes:
            _field("host:", n.text)
    stalled = run.progress is not None and run.progress.stalled
    culprit = run.hang.culprit() if run.hang else ""
    click.echo(
        f"doctor: {path}: "
        + (
            f"{len(run.logs)} log(s) read, {sum(1 for d in run.logs if d.matches)} with a known failure"
            if run.logs
            else "no log in it (train.log, hosts/HOST/*.log)"
        )
        + ("; the run stopped making progress" if stalled else "")
        + (f"; {culprit.split(':')[0]}" if culprit else "")
        + (f"; {len(run.nodes)} host difference(s)" if run.nodes else "")
    )
    return 0


def _show_hang(run: RunDir) -> None:
    p, h = run.progress, run.hang
    if p is not None and p.stalled:
        click.secho(f"hang: {p.text()}", bold=True)
    elif h is not None:
        why = "no report.json with step times to tell a stall by" if p is None else "the steps did not stall"
        click.secho(f"hang evidence in the run directory ({why}):", bold=True)
    if h is None:
        return
    for s in h.stacks:
        at = s.waiting_at()
        _field("py-spy:", f"{s.who} waits in {at}" if at else f"{s.who}: no Python frames")
    if h.flight is not None:
        for r in h.flight.ranks:
            last = f"collective #{r.last_seq} {r.op} ({r.state})" if r.last_seq >= 0 else "no collective"
            _field("nccl:", f"{r.who}: last {last}" + (f" from {r.where}" if r.where else ""))
        for f, why in h.flight.unreadable:
            _field("nccl:", f"{f} not read: {why}")
    for line in h.ray_pending:
        _field("ray:", line)
    if culprit := h.culprit():
        _field("culprit:", culprit)
    elif h.stacks or h.flight is not None:
        _field("culprit:", "no single rank differs from the others")
    for why in h.missing:
        _field("missing:", why)


def _show_metrics(report: Path, steps: list[tuple[int, dict[str, object]]], found: list[MetricFinding]) -> None:
    if not steps:
        click.echo(
            f"doctor: {report} has no training step: the run ended before its first step; "
            "pass the run's log to find why"
        )
        return
    if not found:
        click.echo(
            f"doctor: no failure in the metrics of {report} ({len(steps)} steps): reward, entropy, grad norm, "
            "response length, rollout/actor agreement and the update look as a learning run's do"
        )
        return
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
