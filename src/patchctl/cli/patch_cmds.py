"""`apply`, `revert` and `list`: the patchset engine on the command line."""

from __future__ import annotations

from pathlib import Path

import click

from patchctl.cli import render
from patchctl.cli.errors import handled
from patchctl.cli.options import (
    NonEmptyPath,
    config_option,
    json_option,
    only_option,
    patchset_option,
    patchsets_option,
    target_option,
)
from patchctl.cli.targets import Use, open_target
from patchctl.errors import UnknownPatch
from patchctl.patchsets import engine, needs
from patchctl.patchsets.loader import load_patchsets
from patchctl.patchsets.model import Outcome, PatchResult, Patchset
from patchctl.target import Target


def _only(patchsets: list[Patchset], only: tuple[str, ...]) -> set[str] | None:
    if not only:
        return None
    known = [p.id for ps in patchsets for p in ps.patches]
    for pid in only:
        if pid not in known:
            raise UnknownPatch(pid, known)
    return set(only)


def _show(result: engine.RunResult, title: str) -> None:
    rows = [
        [r.patch, r.status.value, render.quote_path(r.path) if r.path else "-", r.reason + _brought(r, result)]
        for r in result.results
    ]
    render.table(title, ["patch", "status", "file", "reason"], rows, status_col=1)
    for r in result.results:
        if r.detail:
            click.echo(f"\n{r.patch}: how the target differs\n{r.detail}")


def _brought(r: PatchResult, result: engine.RunResult) -> str:
    """Why a patch is ``already-applied`` on a fresh tree: another patch of this run added its file,
    and the shipped file holds the change already (the record's scripts carry their own exports)."""
    if r.status is not Outcome.ALREADY_APPLIED or not r.path:
        return ""
    by = [o.patch for o in result.results if o is not r and o.path == r.path and o.status is Outcome.APPLIED]
    return f" (the file comes with {by[0]}, applied in this run, which holds it already)" if by else ""


@click.command("apply")
@target_option
@patchset_option
@only_option
@click.option(
    "--dry-run",
    is_flag=True,
    help="Write nothing; print what would change, a line per file as `git apply --stat` does.",
)
@click.option(
    "--diff",
    "show_diff",
    is_flag=True,
    help="With --dry-run: print the whole unified diff, edits of existing files before added files "
    "(through a pager on a terminal).",
)
@click.option("--commit", "commit", is_flag=True, help="Commit the changes on a new git branch.")
@click.option("--branch", default=None, help="Branch name for --commit (default patchctl/<patchsets>).")
@click.option("--force", is_flag=True, help="Change files even if they have uncommitted changes.")
@click.option(
    "--conflicts",
    "on_conflict",
    type=click.Choice(["refuse", "markers"]),
    default="refuse",
    show_default=True,
    help="markers: write a conflicting patch at its best candidate place with conflict "
    "markers (upstream, the patch's original, its change) to resolve, then run `patchctl refresh`.",
)
@click.option(
    "--repo",
    "repo",
    type=NonEmptyPath(path_type=Path, file_okay=False),
    default=None,
    help="A clone of upstream verl (checkout or bare mirror): a patch that does not fit is carried along "
    "upstream's commits from its base (captured_against) to TARGET's commit, following renames and moved "
    "functions; one whose anchor upstream removed names the commit. Read only.",
)
@json_option
@config_option
@handled
def apply_cmd(
    target: str,
    patchsets: tuple[str, ...],
    only: tuple[str, ...],
    dry_run: bool,
    show_diff: bool,
    commit: bool,
    branch: str | None,
    force: bool,
    on_conflict: str,
    repo: Path | None,
    as_json: bool,
    config: Path | None,
) -> int:
    """Re-create every patch of the patchsets on TARGET (all-or-nothing)."""
    if commit and on_conflict == "markers":
        raise click.UsageError("--commit would commit conflict markers: drop it, or --conflicts=markers")
    if show_diff and not dry_run:
        raise click.UsageError("--diff shows what a dry run would change: add --dry-run")
    sets = load_patchsets(patchsets)
    tree = open_target(target, config, Use.READ if dry_run else Use.WRITE)
    chosen = _only(sets, only)
    history = None
    if repo is not None:  # the walk's modules are imported only when asked for
        from patchctl.drift.refs import open_repo
        from patchctl.patchsets.history.carry import History

        history = History(open_repo(repo))
    try:
        # a call site without its callee is broken code: --only brings in what the chosen patches need
        result = engine.apply(
            tree,
            sets,
            only=needs.closure(sets, chosen) if chosen else None,
            dry_run=dry_run,
            force=force,
            commit=commit,
            branch=branch,
            markers=on_conflict == "markers",
            planner=history.plan if history is not None else engine.plan_apply,
        )
    finally:
        if history is not None:
            history.close()
    if as_json:
        render.emit_json(result.to_json())
    else:
        from patchctl.cli import dryrun  # here: the summary of a dry run only

        files = dryrun.split(result.diff) if dry_run else []
        if dry_run and show_diff:
            dryrun.show_diff(files)
        elif dry_run:
            click.echo(dryrun.stat(files, render.width()), nl=False)
        title = f"apply {' + '.join(ps.name for ps in sets)} -> {tree.root} (verl {tree.version or '?'})"
        _show(result, f"{title}, dry run: nothing written" if dry_run else title)
        if not result.ok and not result.written:
            click.echo("nothing was written: fix the conflicts above, or leave those patches out with --only", err=True)
        elif result.written:
            click.echo(
                f"wrote {len(result.written)} file(s)"
                + (f"; committed {result.commit[:12]} on {result.branch}" if result.commit else "")
            )
            if not result.ok:  # --conflicts=markers: the conflicts that got no markers
                click.echo(
                    "the conflicts without markers above were left as they are: edit those files by hand, "
                    "or leave those patches out with --only",
                    err=True,
                )
        elif not dry_run:
            click.echo("nothing to write")
        else:
            click.echo(
                "dry run: nothing was written"
                + ("" if show_diff or not files else "; --diff prints the changes, --json holds them too")
            )
    marked = [r.patch for r in result.results if r.status is Outcome.CONFLICT_MARKED]
    if marked and not as_json:
        click.echo(
            f"{len(marked)} conflict(s) written with markers ({', '.join(marked)}): resolve them, then run "
            f"patchctl refresh --target {target} " + " ".join(f"--patchset {p}" for p in patchsets),
            err=True,
        )
    return 0 if result.ok and not marked else 1


@click.command("revert")
@target_option
@patchset_option
@only_option
@click.option("--dry-run", is_flag=True, help="Print the diff that reverting would make; write nothing.")
@click.option("--force", is_flag=True, help="Change files even if they have uncommitted changes.")
@click.option(
    "--repo",
    "repo",
    type=NonEmptyPath(path_type=Path, file_okay=False),
    default=None,
    help="The verl clone `apply --repo` carried patches along: they are found where they were carried to.",
)
@json_option
@config_option
@handled
def revert_cmd(
    target: str,
    patchsets: tuple[str, ...],
    only: tuple[str, ...],
    dry_run: bool,
    force: bool,
    repo: Path | None,
    as_json: bool,
    config: Path | None,
) -> int:
    """Undo what patchctl applied to TARGET, byte for byte."""
    sets = load_patchsets(patchsets)
    tree = open_target(target, config, Use.READ if dry_run else Use.WRITE)
    if repo is not None:
        sets = carried(repo, tree, sets)
    chosen = _only(sets, only)
    result = engine.revert(tree, sets, only=needs.users(sets, chosen) if chosen else None, dry_run=dry_run)
    if as_json:
        render.emit_json(result.to_json())
    else:
        if dry_run:
            click.echo(result.diff, nl=False)
        if result.results:  # nothing recorded: the verdict below says so, an empty table would not
            _show(result, f"revert -> {tree.root}")
        _revert_verdict(result, dry_run)
    return 0 if result.ok else 1


def carried(repo: Path, tree: Target, sets: list[Patchset]) -> list[Patchset]:
    """``sets`` with the patches ``apply --repo`` carried to ``tree`` as they were carried."""
    from patchctl.drift.refs import open_repo
    from patchctl.patchsets.history.carry import History

    history = History(open_repo(repo))
    try:
        return history.recorded(tree, sets)
    finally:
        history.close()


def _revert_verdict(result: engine.RunResult, dry_run: bool) -> None:
    """The last line says how revert ended, as apply's and verify's do: a script or a reader of a
    long table should not have to infer it from the rows."""
    reverted = sum(1 for r in result.results if r.status is Outcome.REVERTED)
    if not result.results:
        click.echo(f"revert: nothing to do, nothing of these patchsets is recorded as applied to {result.target.root}")
    elif not result.ok:
        click.echo(
            "revert: FAILED, nothing was written: fix the conflicts above, or leave those patches out with --only",
            err=True,
        )
    elif dry_run:
        click.echo(f"revert: ok (dry run), {reverted} patch(es) would be reverted")
    else:
        click.echo(f"revert: ok, {reverted} patch(es) reverted, {len(result.written)} file(s) written")


@click.command("list")
@patchsets_option("every built-in patchset")
@json_option
@handled
def list_cmd(patchsets: tuple[str, ...], as_json: bool) -> int:
    """Show the patches of the patchsets (default: every built-in one), with why each exists."""
    from patchctl.patchsets.loader import builtin_names

    sets = load_patchsets(patchsets or tuple(builtin_names()))
    if as_json:
        render.emit_json(
            [
                {
                    "patchset": ps.name,
                    "description": ps.description,
                    "patches": [
                        {
                            "id": p.id,
                            "title": p.title,
                            "kind": p.kind,
                            "tag": p.tag,
                            "target": list(p.target),
                            "why": p.why,
                            "versions": p.versions,
                            **p.meta,
                        }
                        for p in ps.patches
                    ],
                }
                for ps in sets
            ]
        )
        return 0
    for ps in sets:
        click.echo(render.fold(f"{ps.description} ({len(ps.patches)} patches, {ps.manifest})", f"{ps.name}: ", "  "))
        for p in ps.patches:
            click.echo("\n" + render.fold(f"[{p.kind}]  {p.title}", f"  {p.id}  ", "    "))
            click.echo(render.fold(" | ".join(render.quote_path(t) for t in p.target), "    target: ", " " * 12))
            click.echo(render.fold(p.why, "    why: ", " " * 9))
            for k, v in p.meta.items():
                click.echo(render.fold(str(v), f"    {k}: ", " " * (6 + len(k))))
    return 0
