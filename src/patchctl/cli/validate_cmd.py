"""`validate`: preflight every host, Ray across them, the profile's training, the verdict home."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from patchctl.cli import cluster_keys, completion, render, validate_health, validate_show
from patchctl.cli.errors import handled
from patchctl.cli.options import Choice, NonEmptyPath, config_option, json_option
from patchctl.errors import MissingOption

if TYPE_CHECKING:
    from patchctl.validate.model import ValidateResult

#: exit codes: a pass (or a plan), a failed run, an interrupted one (as the error handler's Ctrl-C)
EXIT = {"pass": 0, "planned": 0, "fail": 1, "interrupted": 130}


def _profile_names() -> list[str]:
    from patchctl.train.profiles import load_profiles

    try:
        return sorted([*load_profiles(), "health"])  # health: validate's own, checks without training
    except Exception:  # the command still loads; --profile then reports the manifest error
        return ["smoke", "debug", "fast-load", "standard", "health"]


def _pick(config: Path | None) -> str:
    """The smoke profile the tree migrate sends by default (the verl checkout around the current
    folder) can roll out, said on stderr (stdout stays the report or its JSON): verl >= 0.6
    dropped smoke's HF rollout, and a default the tree refuses was a newcomer's first error. The
    head's preflight still checks the rollout against the tree on the host."""
    from patchctl.errors import PatchctlError
    from patchctl.target import resolve
    from patchctl.train.run import SMOKE_PROFILES, pick_smoke

    try:
        tree = resolve(".", config)
    except PatchctlError:
        name, why = SMOKE_PROFILES[0], "no verl checkout around the current folder to read the rollouts from"
    else:
        verl = f"verl {tree.version} at {tree.root}" if tree.version else f"the tree at {tree.root}"
        name, why = pick_smoke(tree.root, verl)
    click.echo(f"validate: profile {name} (picked: {why}; --profile picks another)", err=True)
    return name


def _seconds(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A finite number above 0, as ``train --timeout``: 0 or less would end the step at once,
    nan and inf never."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise click.BadParameter(
            f"{value} is not a number of seconds above 0; write e.g. --{param.name} 600".replace("_", "-")
        )
    return value


@click.command("validate", context_settings={"ignore_unknown_options": True}, epilog=cluster_keys.EPILOG)
@click.argument("cluster_name", metavar="CLUSTER", required=False, shell_complete=completion.clusters)
@click.option(
    "--profile",
    "profile",
    default=None,
    type=Choice(_profile_names()),
    help="The training run, as for `patchctl train`. Default: smoke or smoke-vllm, whichever rollout the "
    "verl checkout around the current folder has, as migrate sends it (the pick is printed).",
)
@click.option("--dry-run", is_flag=True, help="Print every remote command and the trainer command; start nothing.")
@click.option(
    "--compare",
    "compare",
    type=NonEmptyPath(path_type=Path),
    multiple=True,
    help="An earlier report.json (or its run directory) to put beside this run's; twice and no CLUSTER: "
    "compare those two reports only, OLD first (--compare OLD --compare NEW), as diff takes them.",
)
@click.option(
    "--baseline",
    "baseline",
    type=NonEmptyPath(path_type=Path),
    default=None,
    help="A reference run (report.json, its run directory, or a folder of healthy runs) to judge this run "
    "against per step and metric: same, within band or differs (with the metric and step). With a "
    "report.json as CLUSTER: judge that report, no cluster involved.",
)
@click.option(
    "--join", is_flag=True, help="Use a Ray node already running on a host instead of refusing (it is never stopped)."
)
@click.option(
    "--ray-timeout",
    type=float,
    default=60.0,
    show_default=True,
    callback=_seconds,
    help="Seconds to wait for Ray to list every host with its GPUs.",
)
@click.option(
    "--timeout", type=float, default=None, callback=_seconds, help="Stop the trainer after this many seconds."
)
@click.option(
    "--ray-cpus", type=click.IntRange(min=0), default=None, help="CPUs each Ray node offers (default: Ray counts them)."
)
@click.option(
    "--lease",
    type=float,
    default=60.0,
    show_default=True,
    callback=_seconds,
    help="Seconds a host waits without a heartbeat from patchctl (a frozen or suspended machine, a "
    "partitioned network) before it stops the run's Ray.",
)
@click.option(
    "--insecure-ray",
    is_flag=True,
    help="Run even where Ray cannot prove it refuses callers without the run's token (Ray < 2.52). Only "
    "for a cluster firewalled from everyone else; the report records it.",
)
@validate_health.checks_option
@click.option("--dashboard", is_flag=True, help="Start Ray's dashboard on the head (bound on its address).")
@click.option("--ray-client", is_flag=True, help="Start Ray's client server on the head (bound on its address).")
@click.option(
    "--out",
    type=NonEmptyPath(path_type=Path, file_okay=False),
    default=None,
    help="Local run directory (default: ./.patchctl/validate/CLUSTER-PROFILE-TIME).",
)
@click.option(
    "--queue-timeout",
    type=float,
    default=None,
    callback=_seconds,
    help="Slurm clusters: cancel the job and fail when it is still pending after this many seconds.",
)
@json_option
@config_option
@click.argument("overrides", nargs=-1, type=click.UNPROCESSED)
@handled
def validate_cmd(
    cluster_name: str | None,
    profile: str | None,
    dry_run: bool,
    compare: tuple[Path, ...],
    baseline: Path | None,
    join: bool,
    ray_timeout: float,
    timeout: float | None,
    ray_cpus: int | None,
    lease: float,
    insecure_ray: bool,
    checks: tuple[str, ...] | None,
    dashboard: bool,
    ray_client: bool,
    out: Path | None,
    queue_timeout: float | None,
    as_json: bool,
    config: Path | None,
    overrides: tuple[str, ...],
) -> int:
    """Prove the migrated tree on CLUSTER: preflight every host, bring Ray up across them, run the
    profile's training on the head, bring the log and report home, stop what was started.

    OVERRIDES are hydra overrides (key=value); they win over the profile's and over the
    trainer.nnodes / trainer.n_gpus_per_node that validate takes from Ray.

    A Slurm cluster (scheduler = "slurm") runs as one batch job submitted on its login node: its
    script starts the Ray head on the first node and workers on the others (srun), runs the
    trainer on the head and writes the report; PENDING (with Slurm's reason), RUNNING (with the
    nodes) and the step line show live; Ctrl-C cancels the job (scancel). --queue-timeout bounds
    the wait in the queue.
    """
    from patchctl.clusters import load_cluster
    from patchctl.validate import run
    from patchctl.validate.plan import Options

    if baseline is not None and cluster_name is not None and Path(cluster_name).is_file():
        from patchctl.validate import baseline as baselines
        from patchctl.validate import compare as comparing

        verdict = baselines.judge(comparing.load(Path(cluster_name)), baselines.references(baseline))
        render.emit_json(verdict.to_json()) if as_json else click.echo(f"baseline: {verdict.line()}")
        return 1 if verdict.verdict == "differs" else 0
    if cluster_name is None or (cluster_name.endswith(".json") and len(compare) == 1):
        reports = ([Path(cluster_name)] if cluster_name else []) + list(compare)
        if len(reports) != 2:
            raise MissingOption(
                "validate",
                "name a CLUSTER, or give two reports to compare "
                "(--compare OLD --compare NEW); see patchctl validate --help",
            )
        old, new = reports  # OLD first, as diff takes them
        doc = run.compare_reports(new, old, (out or new.parent))
        render.emit_json(doc) if as_json else validate_show.show_compare(doc)
        return 0
    if len(compare) > 1:
        raise MissingOption("--compare", "give one earlier report when validating a cluster")
    cluster = load_cluster(cluster_name, config)
    if profile is None:
        profile = _pick(config)
    options = Options(
        profile,
        tuple(overrides),
        join,
        ray_timeout,
        timeout,
        out,
        ray_cpus,
        insecure_ray=insecure_ray,
        lease=lease,
        dashboard=dashboard,
        ray_client=ray_client,
        checks=validate_health.checks_for(profile, checks),
    )
    if cluster.slurm is not None:
        return _slurm(cluster, options, dry_run, queue_timeout, as_json, compare[0] if compare else None, baseline)
    if dry_run:
        result = run.dry_run(cluster, options)
        render.emit_json(result.to_json()) if as_json else validate_show.show_plan(result)
        return 0
    live = sys.stderr.isatty()
    result = run.validate(
        cluster,
        options,
        validate_show.note,
        validate_show.progress(live),
        compare[0] if compare else None,
        baseline,
    )
    return _ended(result, live, as_json)


def _slurm(
    cluster: object,
    options: object,
    dry_run: bool,
    queue_timeout: float | None,
    as_json: bool,
    compare: Path | None = None,
    baseline: Path | None = None,
) -> int:
    """validate on a Slurm cluster: the job's plan, or the job run and followed (patchctl.slurm)."""
    from patchctl.clusters import Cluster
    from patchctl.slurm import run as slurm_run
    from patchctl.validate import plan as planning
    from patchctl.validate.plan import Options

    assert isinstance(cluster, Cluster) and isinstance(options, Options)
    if dry_run:
        slurm_run.check(cluster, options)
        plan = slurm_run.own_roots(planning.make(cluster, options))
        words = slurm_run.sbatch_words(plan)
        if as_json:
            render.emit_json({"cluster": cluster.name, "sbatch": words, "script": slurm_run.job_script(plan)})
        else:
            click.echo(f"# on the login node {cluster.hosts[0].ssh}, the script below on stdin:")
            click.echo(planning.show(words))
            click.echo(slurm_run.job_script(plan), nl=False)
        return 0
    live = sys.stderr.isatty()
    result = slurm_run.validate(
        cluster, options, validate_show.note, validate_show.progress(live), queue_timeout, compare, baseline
    )
    return _ended(result, live, as_json)


def _ended(result: ValidateResult, live: bool, as_json: bool) -> int:
    """A run's result shown (after the live line, on a terminal) and its exit code: over ssh and on
    Slurm alike."""
    if live:
        click.echo("", err=True)
    if as_json:
        render.emit_json(result.to_json())
    else:
        validate_show.show(result)
    return EXIT[result.verdict.value]
