"""`apply`, `revert` and `list`: the patchset engine on the command line."""

from __future__ import annotations

from pathlib import Path

import click

from patchctl.cli import render
from patchctl.cli.errors import handled
from patchctl.cli.options import config_option, json_option, only_option, patchset_option, target_option
from patchctl.errors import UnknownPatch
from patchctl.patchsets import engine
from patchctl.patchsets.loader import load_patchsets
from patchctl.patchsets.model import Patchset
from patchctl.cli.targets import open_target


def _only(patchsets: list[Patchset], only: tuple[str, ...]) -> set[str] | None:
    if not only:
        return None
    known = [p.id for ps in patchsets for p in ps.patches]
    for pid in only:
        if pid not in known:
            raise UnknownPatch(pid, known)
    return set(only)


def _results_doc(plan: engine.Plan, written: engine.Written | None, dry_run: bool) -> dict:
    return {
        "target": str(plan.target.root), "version": plan.target.version, "dry_run": dry_run,
        "results": [{"patchset": r.patchset, "patch": r.patch, "status": r.status.value, "path": r.path,
                     "reason": r.reason, **({"detail": r.detail} if r.detail else {})} for r in plan.results],
        "written": written.paths if written else [],
        "commit": written.commit if written else None,
    }


def _show(plan: engine.Plan, title: str) -> None:
    rows = [[r.patch, r.status.value, r.path or "-", r.reason] for r in plan.results]
    render.table(title, ["patch", "status", "file", "reason"], rows, status_col=1)
    for r in plan.results:
        if r.detail:
            click.echo(f"\n{r.patch}: how the target differs\n{r.detail}")


@click.command("apply")
@target_option
@patchset_option
@only_option
@click.option("--dry-run", is_flag=True, help="Print a unified diff of what would change; write nothing.")
@click.option("--commit", "commit", is_flag=True, help="Commit the changes on a new git branch.")
@click.option("--branch", default=None, help="Branch name for --commit (default patchctl/<patchsets>).")
@click.option("--force", is_flag=True, help="Change files even if they have uncommitted changes.")
@json_option
@config_option
@handled
def apply_cmd(target: str, patchsets: tuple[str, ...], only: tuple[str, ...], dry_run: bool, commit: bool,
              branch: str | None, force: bool, as_json: bool, config: Path | None) -> int:
    """Re-create every patch of the patchsets on TARGET (all-or-nothing)."""
    sets = load_patchsets(patchsets)
    tree = open_target(target, config)
    plan = engine.plan_apply(tree, sets, _only(sets, only))
    written = None
    if not dry_run and plan.ok:
        ids = [r.patch for r in plan.results if r.status.value == "applied"]
        message = f"patchctl: apply {', '.join(ps.name for ps in sets)}\n\nPatches: {', '.join(ids)}\n"
        written = engine.execute(plan, force=force, message=message,
                                 commit_branch=(branch or "patchctl/" + "+".join(ps.name for ps in sets)) if commit and ids else None)
    plan.hold_back()
    if as_json:
        render.emit_json(_results_doc(plan, written, dry_run))
    else:
        if dry_run:
            click.echo(plan.diff(), nl=False)
        _show(plan, f"apply {' + '.join(ps.name for ps in sets)} -> {tree.root} (verl {tree.version or '?'})")
        if not plan.ok:
            click.echo("nothing was written: fix the conflicts above, or leave those patches out with --only", err=True)
        elif written and written.paths:
            click.echo(f"wrote {len(written.paths)} file(s)" + (f"; committed {written.commit[:12]} on {written.branch}"
                                                                 if written.commit else ""))
        elif not dry_run:
            click.echo("nothing to write")
    return 0 if plan.ok else 1


@click.command("revert")
@target_option
@patchset_option
@only_option
@click.option("--dry-run", is_flag=True, help="Print the diff that reverting would make; write nothing.")
@click.option("--force", is_flag=True, help="Change files even if they have uncommitted changes.")
@json_option
@config_option
@handled
def revert_cmd(target: str, patchsets: tuple[str, ...], only: tuple[str, ...], dry_run: bool, force: bool,
               as_json: bool, config: Path | None) -> int:
    """Undo what patchctl applied to TARGET, byte for byte."""
    sets = load_patchsets(patchsets)
    tree = open_target(target, config)
    plan = engine.plan_revert(tree, sets, _only(sets, only))
    written = None
    if not dry_run and plan.ok:
        # revert rewrites only files whose patch it found intact, so local edits elsewhere in
        # those files are never at stake; --force is accepted for symmetry with apply
        written = engine.execute(plan, force=True, command="revert")
    plan.hold_back()
    if as_json:
        render.emit_json(_results_doc(plan, written, dry_run))
    else:
        if dry_run:
            click.echo(plan.diff(), nl=False)
        _show(plan, f"revert -> {tree.root}")
        if not plan.results:
            click.echo("nothing recorded as applied there")
    return 0 if plan.ok else 1


@click.command("list")
@patchset_option
@json_option
@handled
def list_cmd(patchsets: tuple[str, ...], as_json: bool) -> int:
    """Show the patches of the patchsets, with why each exists."""
    sets = load_patchsets(patchsets)
    if as_json:
        render.emit_json([{"patchset": ps.name, "description": ps.description, "patches": [
            {"id": p.id, "title": p.title, "kind": p.kind, "tag": p.tag, "target": list(p.target), "why": p.why,
             "versions": p.versions, **p.meta} for p in ps.patches]} for ps in sets])
        return 0
    import textwrap

    for ps in sets:
        click.echo(f"{ps.name}: {ps.description} ({len(ps.patches)} patches, {ps.manifest})")
        for p in ps.patches:
            click.echo(f"\n  {p.id}  [{p.kind}]  {p.title}")
            click.echo(f"    target: {' | '.join(p.target)}")
            click.echo(textwrap.fill(" ".join(p.why.split()), 100, initial_indent="    why: ", subsequent_indent="         "))
            for k, v in p.meta.items():
                click.echo(f"    {k}: {v}")
    return 0
