"""`bisect`: the first upstream commit where one patch's outcome changes."""

from __future__ import annotations

from pathlib import Path

import click

from patchctl.cli import render
from patchctl.cli.errors import handled
from patchctl.cli.options import SPEC, NonEmptyPath, config_option, json_option, patchset_option
from patchctl.config import expand
from patchctl.drift.bisect import Bisection, bisect
from patchctl.drift.probe import Probe
from patchctl.drift.refs import find_patch, open_repo, resolve
from patchctl.patchsets.loader import load_patchsets


@click.command("bisect")
@click.argument("patch_id", metavar="PATCH")
@click.option("--good", "good", required=True, metavar="REF", help="A ref where the patch has its old outcome.")
@click.option("--bad", "bad", required=True, metavar="REF", help="A ref where its outcome differs.")
@click.option(
    "--repo",
    "repo",
    required=True,
    type=NonEmptyPath(path_type=Path, file_okay=False),
    help="A verl git repository (a checkout or a bare mirror); read with git cat-file, never changed.",
)
@patchset_option
@json_option
@handled
def bisect_cmd(patch_id: str, good: str, bad: str, repo: Path, patchsets: tuple[str, ...], as_json: bool) -> int:
    """Find the first commit on --bad's first-parent line where PATCH's outcome changes.

    Each probe plans the patch on the few files it reads, taken from git; a commit whose files
    do not parse is skipped and said. A --good on another branch (a release branch) is searched
    from its merge base with --bad.

    \b
    patchctl bisect vllm-enable-log-requests --good v0.6.1 --bad v0.7.0 --repo ~/src/verl
    """
    root = open_repo(repo)
    ps, patch = find_patch(load_patchsets(patchsets), patch_id)
    found = bisect(root, ps, patch, resolve(root, "--good", good), resolve(root, "--bad", bad))
    if as_json:
        render.emit_json(found.to_json())
    else:
        show(found, good, bad)
    return 0


def _side(p: Probe) -> str:
    status = p.status.value if p.status else "?"
    return f"{status} in {render.quote_path(p.path or '-')}: {render.printable(p.reason)}"


def show(found: Bisection, good: str, bad: str) -> None:
    click.echo(f"bisect {found.patch}: {good} -> {bad}")
    if found.base:
        click.echo(
            f"  {good} is not an ancestor of {bad}: searched from their merge base {found.base[:12]}, "
            f"which has {good}'s outcome"
        )
    for p in found.skipped:
        click.echo(f"  skipped {p.sha[:12]}: {render.printable(p.skipped or p.reason)}")
    if found.first:
        c = found.first
        click.echo(f"first changed commit: {c.sha}  {c.date}  {render.printable(c.subject)}")
    else:
        click.echo(f"the change is in one of these {len(found.candidates)} commits (the others were skipped):")
        for c in found.candidates:
            click.echo(f"  {c.sha}  {c.date}  {render.printable(c.subject)}")
    click.echo(f"  before ({found.before.sha[:12]}): {_side(found.before)}")
    click.echo(f"  after  ({found.after.sha[:12]}): {_side(found.after)}")
    click.echo(f"{found.span} commit(s) on the first-parent line, {found.probes} probed")


@click.command("retire")
@click.option(
    "--target",
    "-t",
    "target",
    required=True,
    metavar="T",
    type=SPEC,
    help="Where to look: a release (0.7.0), a ref of --repo, a directory, or a name from [targets].",
)
@click.option(
    "--out",
    "out",
    type=NonEmptyPath(path_type=Path, file_okay=False),
    default=None,
    help="A new folder for the patchset without the retired patches (default: only report).",
)
@click.option(
    "--repo",
    "repo",
    type=NonEmptyPath(path_type=Path, file_okay=False),
    default=None,
    help="A verl git repository: with --since, bisect each retired patch to the commit that absorbed it.",
)
@click.option(
    "--since",
    "since",
    default=None,
    metavar="REF",
    help="A ref of --repo where the patches were still needed (the version you are on).",
)
@patchset_option
@json_option
@config_option
@handled
def retire_cmd(
    target: str,
    out: Path | None,
    repo: Path | None,
    since: str | None,
    patchsets: tuple[str, ...],
    as_json: bool,
    config: Path | None,
) -> int:
    """Write a patchset without the patches superseded upstream on T, each with a record of why.

    The record (retired.json in the new patchset) names, per retired patch, the reason, and with
    --repo/--since the upstream commit that absorbed it and the first release tag holding it.
    The patches' applied_upstream and drop_when are checked against that; a disagreement is
    reported and makes the exit code 1.

    \b
    patchctl retire --target v0.7.0 --repo ~/src/verl --since v0.6.1 --out ./uky-0.7
    """
    from patchctl.drift.retiring import retire

    sets = load_patchsets(patchsets)
    if len(sets) != 1:
        raise click.UsageError("retire works on one patchset at a time; pass one --patchset")
    if since is not None and repo is None:
        raise click.UsageError("--since names a ref of --repo; pass --repo too")
    root = open_repo(repo) if repo is not None else None
    done = retire(expand(target, config), sets[0], out, root, since)
    if as_json:
        render.emit_json(done.to_json())
        return 1 if done.problems else 0
    click.echo(f"retire {done.patchset} on {done.target} (verl {done.version or '?'}):")
    for r in done.retired:
        by = (
            f"absorbed by {r.absorbed_by.sha[:12]} {r.absorbed_by.date[:10]} "
            f"{render.printable(r.absorbed_by.subject)} (first in {r.release or 'no release yet'})"
            if r.absorbed_by
            else "absorbing commit not bisected (it needs --repo, --since, and a ref or a vX.Y.Z tag for the target)"
        )
        click.echo(f"  retired {r.patch}: {by}; drop_when {r.drop_when or '-'}")
    if not done.retired:
        click.echo("  nothing is superseded upstream there; nothing to retire")
    for line in done.problems:
        click.echo(f"  ! {render.printable(line)}")
    if done.out:
        click.echo(
            f"wrote {render.quote_path(str(done.out))} ({len(done.kept)} patch(es) kept, record in retired.json)"
        )
    return 1 if done.problems else 0
