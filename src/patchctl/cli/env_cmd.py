"""`verify --env`: resolve what to check against, run the preflight, render verdicts."""

from __future__ import annotations

from pathlib import Path

import click

from patchctl import preflight
from patchctl.cli import render
from patchctl.cli.targets import Use, open_target
from patchctl.clusters import load_cluster
from patchctl.preflight.context import default_target
from patchctl.preflight.model import EnvReport, Status
from patchctl.target import Target

COLOURS = {Status.PASS: "green", Status.WARN: "yellow", Status.FAIL: "red", Status.SKIP: "bright_black"}


def run_env(
    target: str, target_given: bool, cluster: str | None, config: Path | None, patchsets: tuple[str, ...], as_json: bool
) -> int:
    """A defaulted ``--target .`` outside a verl tree means "no target": the checks that need
    one are skipped instead of the whole preflight failing."""
    tree: Target | None = None
    if target_given or default_target(Path(target)):
        tree = open_target(target, config, Use.RECOVER)
    clus = load_cluster(cluster, config) if cluster else None
    report = preflight.run(preflight.build(tree, clus, patchsets=patchsets))
    if as_json:
        render.emit_json(report.to_json(tree, cluster))
    else:
        show(report, tree, cluster)
    return 0 if report.ok else 1


def show(report: EnvReport, tree: Target | None, cluster: str | None) -> None:
    """The table, then each fix as one whole line below it: a fix holds commands and settings
    (``export X=1``, ``+a.b.attn_implementation=sdpa``) that a table cell would break mid-token,
    and a soft-wrapped line still copies whole from a terminal."""
    rows = [[r.name, r.status.value, f"{r.seconds:.2f}s", r.value] for r in report.results]
    where = f"verl {tree.version or '?'} at {tree.root}" if tree else "no target"
    render.table(
        f"environment preflight ({where}{f', cluster {cluster}' if cluster else ''})",
        ["check", "status", "time", "measured"],
        rows,
        1,
        {s.value: c for s, c in COLOURS.items()},
    )
    fixes = [r for r in report.results if r.fix and r.status is not Status.PASS]
    if fixes:
        click.echo("fixes:")
    for r in fixes:
        click.echo(f"  {r.name} ({r.status.value}): {render.printable(r.fix)}")
    counts = ", ".join(f"{n} {s}" for s, n in report.counts().items() if n)
    click.echo(f"verify --env: {'ok' if report.ok else 'FAILED'} ({counts}) in {report.seconds:.1f}s")
