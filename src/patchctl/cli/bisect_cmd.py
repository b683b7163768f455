"""`bisect`: the first upstream commit where one patch's outcome changes."""

from __future__ import annotations

from pathlib import Path

import click

from patchctl.cli import render
from patchctl.cli.errors import handled
from patchctl.cli.options import NonEmptyPath, json_option, patchset_option
from patchctl.drift.bisect import Bisection, bisect
from patchctl.drift.probe import Probe
from patchctl.drift.refs import find_patch, open_repo, resolve
from patchctl.patchsets.loader import load_patchsets


@click.command("bisect")
@click.argument("patch_id", metavar="PATCH")
@click.option("--good", "good", required=True, metavar="REF", help="A ref where the patch has its old outcome.")
@click.option("--bad", "bad", required=True, metavar="REF", help="A ref where its outcome differs.")
@click.option("--repo", "repo", required=True, type=NonEmptyPath(path_type=Path, file_okay=False),
              help="A verl git repository (a checkout or a bare mirror); read with git cat-file, never changed.")
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
        click.echo(f"  {good} is not an ancestor of {bad}: searched from their merge base {found.base[:12]}, "
                   f"which has {good}'s outcome")
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
