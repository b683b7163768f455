"""validate's terminal output: the live notes and progress line, the plan of --dry-run, the
run's tables and verdict, and the comparison of two reports.

Kept apart from validate_cmd.py, which only parses the options and calls the run: the CLI renders
what the run returns, so the rendering is all here and is tested without a cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from patchctl.cli import render, validate_health


def note(n: Any) -> None:
    click.echo(f"{n.stage:>9}  {n.host}: {unprefixed(n.text, n.host)}", err=True)


def unprefixed(text: str, who: str) -> str:
    """``text`` without a leading ``WHO: ``: the validate errors name their host first, and the
    line already does (``node1: node1: unreachable`` read as two hosts)."""
    return text[len(who) + 2 :] if who and text.startswith(f"{who}: ") else text


def progress(live: bool) -> Any:
    def show(p: Any) -> None:
        line = render.progress_line(p)
        click.echo(f"\r\033[K{line}" if live else f"    train  {line}", err=True, nl=not live)

    return show


def show_plan(result: Any) -> None:
    from patchctl.validate import plan

    click.echo(f"# validate {result.cluster} --profile {result.profile}: run {result.run_id}, nothing is started")
    click.echo("# $STAGE: a temporary directory holding validate/pkg/patchctl, a link to patchctl's package")
    for c in result.commands:
        click.echo(f"# {c.label}: {c.purpose}")
        click.echo(plan.show(c.argv))
    if result.trainer_command:  # --profile health trains nothing
        click.echo("# the trainer, on the head (trainer.nnodes / n_gpus_per_node: what Ray reports at run time)")
        click.echo(plan.show(result.trainer_command))
    click.echo(f"# local run directory: {result.run_dir}")


def show(result: Any) -> None:
    if result.preflight:
        checks = list(dict.fromkeys(r.check for h in result.preflight for r in h.rows))
        rows = []
        for check in checks:
            cells = []
            for h in result.preflight:
                row = next((r for r in h.rows if r.check == check), None)
                cells.append(
                    "-"
                    if row is None
                    else row.status
                    if row.status in ("pass", "skip")
                    else f"{row.status}: {row.value}"
                )
            rows.append([check, *cells])
        render.table("preflight (host x check)", ["check", *[h.label for h in result.preflight]], rows)
        for h in result.preflight:
            for r in h.failed:
                click.echo(f"  {h.label}: {r.check}: {r.fix}")
    validate_health.show(result.health)
    if result.ray:
        render.table(
            f"Ray cluster {result.ray.address} ({result.ray.seconds:.1f} s)",
            ["host", "address", "GPUs", "CUDA_VISIBLE_DEVICES", "GPU", "joined (s)"],
            [
                [
                    n.label,
                    n.address,
                    str(n.gpus),
                    str(n.cuda_visible_devices or "-"),
                    ", ".join(n.gpu_names) or "-",
                    f"{n.joined_at:.1f}" + (" (existing)" if n.joined_existing else ""),
                ]
                for n in result.ray.nodes
            ],
        )
    if result.trained:
        gates = [
            [g.get("name", ""), g.get("status", ""), str(g.get("value")), g.get("reason", "")]
            for g in result.trained.gates
        ]
        if gates:
            render.table("train gates (on the head)", ["gate", "status", "value", "detail"], gates, 1)
    if result.teardown:
        click.echo(
            "teardown: "
            + "; ".join(
                f"{t.label} {t.status}" + (f" ({t.stopped} processes)" if t.stopped else "") for t in result.teardown
            )
        )
    if result.slurm:
        s = result.slurm
        click.echo(f"slurm job {s['job_id']}: {s['state']}" + (f" on {s['nodes']}" if s.get("nodes") else ""))
    click.echo("time (s): " + ", ".join(f"{k} {v}" for k, v in result.timings.items() if v is not None))
    if result.run_dir and Path(result.run_dir).is_dir():  # a run stopped before it made one has none
        click.echo(
            f"run directory: {result.run_dir}"
            + (f" ({', '.join(Path(f).name for f in result.fetched)})" if result.fetched else "")
        )
    if result.comparison:
        show_compare(result.comparison)
    if result.insecure_ray:
        auth = result.ray.auth if result.ray else {}
        click.echo(
            "WARNING: --insecure-ray: this run did not insist that its Ray cluster refuses callers without the "
            "token" + (" (" + ", ".join(f"{k}: {v['outcome']}" for k, v in auth.items()) + ")" if auth else "")
        )
    cause = unprefixed(result.cause, "validate")
    click.echo(f"validate: {result.verdict.value.upper()}" + (f" — {cause}" if cause else ""))


def show_compare(doc: dict[str, Any]) -> None:
    render.table("compare (new vs old)", ["", "new", "old"], [list(r) for r in doc["rows"]])
    if doc["versions"]:
        render.table("package versions that differ", ["package", "new", "old"], [list(v) for v in doc["versions"]])
    else:
        click.echo("package versions: the same")
    p = doc["patches"]
    click.echo(
        f"patches: {len(p['both'])} in both"
        + (f"; only new: {', '.join(p['only_new'])}" if p["only_new"] else "")
        + (f"; only old: {', '.join(p['only_old'])}" if p["only_old"] else "")
    )
    if doc.get("plot"):
        click.echo(f"reward curves: {doc['plot']}")
