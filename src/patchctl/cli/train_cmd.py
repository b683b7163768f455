"""`train`: a GRPO validation run of the target tree, with a live progress line and a verdict."""

from __future__ import annotations

import math
import os
import shlex
import sys
import time
from pathlib import Path

import click

from patchctl.cli import completion, render
from patchctl.cli.errors import handled
from patchctl.cli.options import (
    SPEC,
    Choice,
    NonEmptyPath,
    config_option,
    json_option,
    target_option,
)


def _process_age() -> float:
    """Seconds since this interpreter started, so the timings include patchctl's own start-up."""
    try:
        import os

        from patchctl.orphans import start_time

        start = int(start_time(os.getpid()) or "")
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - start / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def _profile_names() -> list[str]:
    from patchctl.train.profiles import load_profiles

    try:
        return sorted(load_profiles())
    except Exception:  # the command still loads; --profile then reports the manifest error
        return ["smoke", "debug", "fast-load", "standard"]


def _seconds(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A finite number above 0: 0 or less would stop the trainer at once, nan/inf never."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise click.BadParameter(f"{value} is not a number of seconds above 0; write e.g. --timeout 3600")
    return value


@click.command("train", context_settings={"ignore_unknown_options": True})
@target_option
@click.option(
    "--profile",
    "profile_name",
    default=None,
    type=Choice(_profile_names()),
    help="Which run: smoke and smoke-vllm need no model or data; debug/fast-load/standard are the "
    "record's scripts. Default: smoke, or smoke-vllm where the tree has no HF rollout (verl >= 0.6).",
)
@click.option(
    "--cluster",
    "cluster_name",
    default=None,
    shell_complete=completion.clusters,
    help="Take MODEL_PATH, DATA_DIR, ... from this cluster's paths (else the environment, else the "
    "tree's git_ignore.py).",
)
@click.option("--dry-run", is_flag=True, help="Print the exact command and environment; run nothing.")
@click.option(
    "--out",
    "out",
    type=NonEmptyPath(path_type=Path, file_okay=False),
    default=None,
    help="Run directory for the log, report and plot (default: TARGET/.patchctl/runs/PROFILE-TIME).",
)
@click.option(
    "--python",
    "python",
    default=sys.executable,
    type=SPEC,
    show_default="this interpreter",
    help="The interpreter that runs verl.",
)
@click.option(
    "--timeout",
    "timeout",
    type=float,
    default=None,
    callback=_seconds,
    help="Stop the trainer after this many seconds (more than 0).",
)
@click.option("--verbose", "-v", is_flag=True, help="Echo the trainer's output as it comes.")
@json_option
@config_option
@click.argument("overrides", nargs=-1, type=click.UNPROCESSED)
@handled
def train_cmd(
    target: str,
    profile_name: str | None,
    cluster_name: str | None,
    dry_run: bool,
    out: Path | None,
    python: str,
    timeout: float | None,
    verbose: bool,
    as_json: bool,
    config: Path | None,
    overrides: tuple[str, ...],
) -> int:
    """Run GRPO on TARGET with a profile's settings and judge it by its gates.

    OVERRIDES are hydra overrides (key=value) added after the profile's, so they win. They and the
    profile's are checked before launch as hydra parses them, and against the keys of the tree's config.
    """
    from patchctl.cli import main as entry

    t0 = time.monotonic() - (_process_age() if entry.LAUNCHED else 0.0)
    from patchctl import gpuusers
    from patchctl.cli.targets import Use, open_target
    from patchctl.clusters import load_cluster
    from patchctl.train import run
    from patchctl.train.profiles import load_profile

    cluster = load_cluster(cluster_name, config) if cluster_name else None
    tree = open_target(target, config, Use.RECOVER)
    picked = ""
    if profile_name is None:
        profile_name, why = run.default_profile(tree)
        picked = f" (picked: {why}; --profile picks another)"
    profile = load_profile(profile_name)
    plan = run.plan(tree, profile, cluster, list(overrides), python, out)
    if dry_run:
        if as_json:
            if picked:
                click.echo(f"train: profile {profile.name}{picked}", err=True)
            render.emit_json(plan.to_json())
            return 0
        click.echo(f"# profile {profile.name}{picked}: {profile.description}")
        for a in plan.adapted:
            click.echo(f"# adapted for verl {tree.version} ({a.verl}): {a.why}")
        for key, setting in plan.settings().items():
            click.echo(f"# {key}={setting['value']}  (from {setting['source']})")
        click.echo(f"cd {shlex.quote(str(plan.launch.cwd))}")
        for k, v in plan.launch.env.items():
            click.echo(f"export {k}={shlex.quote(v)}")
        if plan.head:
            click.echo("# the Ray head node, started at the same moment (without RAY_ADDRESS):")
            click.echo(" ".join(shlex.quote(a) for a in plan.head.argv) + " &")
        argv = [shlex.quote(a) for a in plan.launch.argv]
        click.echo(" \\\n    ".join([" ".join(argv[:3]), *argv[3:]]))
        return 0

    live = sys.stderr.isatty() and not verbose

    def progress(p: run.Progress) -> None:
        line = render.progress_line(p)
        click.echo(f"\r\033[K{line}" if live else line, err=True, nl=not live)

    def echo(line: str, at: float) -> None:
        click.echo(f"[{at:6.1f}] {line}", err=True)

    # this host's GPUs for this run alone, until it ends however it ends (gpulease.py)
    lease = gpuusers.hold(
        *gpuusers.owner_here(
            "patchctl train",
            str(plan.run_dir),
            str(plan.run_dir),
            tree.root,
            {**os.environ, **plan.launch.env}.get("CUDA_VISIBLE_DEVICES"),
        )
    )
    click.echo(f"train: profile {profile.name}{picked} on {tree.root} (log: {plan.launch.log})", err=True)
    try:
        result = run.train(plan, tree, t0, timeout=timeout, on_progress=progress, on_line=echo if verbose else None)
    finally:
        if lease is not None:
            lease.release()
    if live:
        click.echo("", err=True)
    if as_json:
        render.emit_json(result.to_json())
        return 0 if result.passed else 1
    rows = [
        [g.name, g.status.value, "-" if g.value is None else str(g.value), g.threshold, g.reason] for g in result.gates
    ]
    render.table(f"train {profile.name}: gates", ["gate", "status", "value", "bar", "detail"], rows, 1)
    br = result.timings.breakdown()
    click.echo(
        "time (s): "
        + ", ".join(f"{k} {v}" for k, v in br.items() if v is not None)
        + f"; verdict at {result.timings.verdict}"
    )
    click.echo(f"log: {result.log}\nreport: {result.report}" + (f"\nplot: {result.plot}" if result.plot else ""))
    findings = [f.to_json() for f in result.doctor or ()]  # doctor ranks the root cause first
    for i, doc in enumerate(findings):
        click.echo(
            f"doctor: {'also' if i else 'root cause'}: {doc['title']} (log line {doc['line']}): {doc['excerpt']}"
            if "title" in doc
            else f"doctor: {doc['error']}"
        )
    root = next((doc for doc in findings if "title" in doc), None)
    click.echo(
        "train: "
        + ("PASS" if result.passed else "FAIL")
        + (f" (root cause: {root['title']}, log line {root['line']})" if root and not result.passed else "")
    )
    return 0 if result.passed else 1
