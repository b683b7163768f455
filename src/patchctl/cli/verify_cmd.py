"""`verify`: structural proof that each patch is present, and the tag inventory.

The check and its report are :func:`patchctl.cli.verify_run.run`, which the plain command lines
reach without click (:mod:`patchctl.cli.quick`); this is click's reading of every other one."""

from __future__ import annotations

from pathlib import Path

import click

from patchctl.cli import cluster_keys, completion, verify_run
from patchctl.cli.errors import handled
from patchctl.cli.options import NonEmptyPath, config_option, json_option, patchset_option, target_option


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
    return verify_run.run(target, patchsets, strict, as_json, config, repo)
