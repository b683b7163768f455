"""`verify`: structural proof that each patch is present, and the tag inventory."""

from __future__ import annotations

from pathlib import Path

import click

from patchctl.cli import cluster_keys, completion, render
from patchctl.cli.errors import handled
from patchctl.cli.options import NonEmptyPath, config_option, json_option, patchset_option, target_option
from patchctl.cli.targets import open_target
from patchctl.patchsets.loader import load_patchsets
from patchctl.verify.patches import verify


@click.command("verify", epilog=cluster_keys.EPILOG)
@target_option
@patchset_option
@click.option("--strict", is_flag=True, help="Also fail when tagged lines exist that no patch accounts for.")
@click.option("--env", "env", is_flag=True, help="Check the environment instead: torch/CUDA, vLLM, Ray, data, ...")
@click.option(
    "--cluster",
    "cluster",
    default=None,
    shell_complete=completion.clusters,
    help="With --env: check this cluster's data and model paths.",
)
@click.option(
    "--repo",
    "repo",
    type=NonEmptyPath(path_type=Path, file_okay=False),
    default=None,
    help="The verl clone `apply --repo` carried patches along: they are checked where they were carried to.",
)
@json_option
@config_option
@handled
def verify_cmd(
    target: str,
    patchsets: tuple[str, ...],
    strict: bool,
    env: bool,
    cluster: str | None,
    repo: Path | None,
    as_json: bool,
    config: Path | None,
) -> int:
    """Check that every patch is present and intact in TARGET; list tags no patch accounts for.

    With --env: run the environment preflight (one verdict and fix per check)."""
    if env or cluster:
        from patchctl.cli.env_cmd import run_env

        given = click.get_current_context().get_parameter_source("target") is not click.core.ParameterSource.DEFAULT
        return run_env(target, given, cluster, config, patchsets, as_json)
    sets = load_patchsets(patchsets)
    tree = open_target(target, config)
    if repo is not None:
        from patchctl.cli.patch_cmds import carried

        sets = carried(repo, tree, sets)
    report = verify(tree, sets)
    ok = report.passes(strict)
    if as_json:
        render.emit_json(report.to_json(strict))
        return 0 if ok else 1
    rows = [[c.patch, c.status.value, render.quote_path(c.path) if c.path else "-", c.reason] for c in report.checks]
    render.table(f"verify {tree.root} (verl {tree.version or '?'})", ["patch", "status", "file", "reason"], rows, 1)
    for c in report.checks:
        if c.detail:
            click.echo(f"\n{c.patch}: how it differs\n{c.detail}")
    click.echo(f"tagged lines: {len(report.accounted)} accounted for by patches, {len(report.unaccounted)} not")
    for h in report.unaccounted:
        # "stray", not git's "untracked": the file may well be tracked; no patch accounts for the line
        click.echo(f"  stray tag  {render.quote_path(h.path)}:{h.line}: {render.printable(h.text.strip())}")
    if report.unaccounted:
        click.echo("  (hand edits no patch accounts for: worth capturing into a patchset)")
    for rel in report.leftovers:
        click.echo(f"  leftover temp file  {render.quote_path(rel)}: a write was cut off here; delete it (rm {rel!r})")
    for waiting in report.conflicts:
        click.echo(
            f"  needs resolution  {render.printable(waiting)}: edit its conflict markers, then run patchctl refresh"
        )
    click.echo("verify: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1
