"""`drift` and `watch`: what upstream changed under every patch, between two trees or lately."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from patchctl.cli import render
from patchctl.cli.errors import handled
from patchctl.cli.options import SPEC, NonEmptyPath, config_option, json_option, patchset_option
from patchctl.config import expand
from patchctl.drift.compare import drift
from patchctl.drift.model import Drift, PatchDrift
from patchctl.drift.refs import find_patch, open_repo
from patchctl.drift.watch import Watch
from patchctl.patchsets.loader import load_patchsets

markdown_option = click.option(
    "--markdown", "as_markdown", is_flag=True, help="Print GitHub Markdown (a table, then each patch's diffs) instead."
)
repo_option = click.option(
    "--repo",
    "repo",
    type=NonEmptyPath(path_type=Path, file_okay=False),
    default=None,
    help="A verl git repository (checkout or bare mirror) whose refs --from/--to name.",
)


@click.command("drift")
@click.option(
    "--from",
    "source",
    required=True,
    metavar="A",
    type=SPEC,
    help="The version you are on: a release, a ref, a path, a name from [targets].",
)
@click.option(
    "--to",
    "dest",
    required=True,
    metavar="B",
    type=SPEC,
    help="The version you consider: a release, a ref, a path, a name from [targets].",
)
@repo_option
@patchset_option
@json_option
@markdown_option
@config_option
@handled
def drift_cmd(
    source: str,
    dest: str,
    repo: Path | None,
    patchsets: tuple[str, ...],
    as_json: bool,
    as_markdown: bool,
    config: Path | None,
) -> int:
    """Show what upstream changed under each patch between A and B, even where it still applies.

    Per patch: its outcome on both sides; the function or class around its anchor, the callee's
    signature (call and keyword patches), the file it edits or the files beside an added file,
    each with a trimmed upstream diff; and the changes that carry meaning flagged (a default, a
    parameter added, removed or renamed, a definition moved or deleted, a file renamed).
    Exit code 1 when anything under a patch changed.

    \b
    patchctl drift --from 0.6.1 --to 0.7.0
    patchctl drift --repo ~/src/verl --from v0.7.0 --to main --markdown
    """
    if as_json and as_markdown:
        raise click.UsageError("pass at most one of --json and --markdown")
    found = drift(
        expand(source, config),
        expand(dest, config),
        load_patchsets(patchsets),
        open_repo(repo) if repo is not None else None,
    )
    if as_json:
        render.emit_json(found.to_json())
    elif as_markdown:
        click.echo(markdown(found), nl=False)
    else:
        show(found)
    return 1 if found.changed else 0


def _under(p: PatchDrift) -> str:
    return ", ".join(f"{r.what} {r.status}" for r in p.regions if r.changed) or "-"


def show(found: Drift) -> None:
    rows = [
        [p.patch, p.before.status.value, p.after.status.value, _under(p), "; ".join(p.flags) or "-"]
        for p in found.patches
    ]
    dropped = render.table(
        f"drift {found.source} ({found.source_version or '?'}) -> {found.dest} ({found.dest_version or '?'})",
        ["patch", found.source, found.dest, "changed under it", "flags"],
        rows,
        status_col=2,  # the outcome on the newer side, whole and coloured
        drop_to_fit=4,  # at 80 columns a flags cell was 22 lines: each patch's flags are listed below it
    )
    if dropped:
        click.echo("(flags: below, under each patch that changed)")
    for p in found.patches:
        if not p.changed:
            continue
        click.echo(f"\n{p.patch}:")
        if p.outcome_changed:
            click.echo(
                f"  outcome {p.before.status.value} -> {p.after.status.value}: {render.printable(p.after.reason)}"
            )
        for r in p.regions:
            if r.changed:
                click.echo(f"  {r.what} {render.printable(r.name)}: {r.status}")
                for flag in r.flags:
                    click.echo(f"    ! {render.printable(flag)}")
                if r.diff:
                    click.echo("\n".join("    " + line for line in shown_diff(r.diff)))
    _metadata_line(found)
    changed = [p.patch for p in found.patches if p.changed]
    click.echo(
        f"drift: upstream changed under {len(changed)} patch(es): {', '.join(changed)}"
        if changed
        else "drift: nothing changed under any patch"
    )


def _metadata_line(found: Drift) -> None:
    """One line for the added files beside which only packaging metadata and docs changed."""
    beside = [p.patch for p in found.patches if any(r.status == "metadata" for r in p.regions)]
    if not beside:
        return
    files = sorted(
        {
            f
            for p in found.patches
            for r in p.regions
            if r.status == "metadata"
            for f in r.diff.rsplit(": ", 1)[-1].strip().split(", ")
        }
    )
    click.echo(  # the file names are upstream's: escaped as its diffs are
        f"\nbeside the files of {len(beside)} patch(es) ({', '.join(beside)}) only packaging metadata and docs "
        f"changed ({render.printable(', '.join(files))}): not counted as a change"
    )


def shown_diff(diff: str) -> list[str]:
    """An upstream diff's lines, escaped as bisect and watch escape upstream subjects
    (:func:`render.printable`): an OSC or erase-line sequence in an upstream comment or file name
    must not reach the terminal (issue 41 req 6). Tabs stay, as git diff shows them: they only
    move the cursor along the line."""
    return ["\t".join(render.printable(part) for part in line.split("\t")) for line in diff.rstrip("\n").split("\n")]


def markdown(found: Drift) -> str:
    """A GitHub table, then a collapsed section per changed patch with its flags and diffs."""

    def cell(text: str) -> str:
        return render.printable(text).replace("|", "\\|")

    lines = [
        f"### drift {cell(found.source)} -> {cell(found.dest)}",
        "",
        f"| patch | {cell(found.source)} | {cell(found.dest)} | changed under it | flags |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {p.patch} | {p.before.status.value} | {p.after.status.value} | {cell(_under(p))} | "
        f"{cell('; '.join(p.flags)) or '-'} |"
        for p in found.patches
    ]
    for p in found.patches:
        if not p.changed:
            continue
        lines += ["", f"<details><summary>{p.patch}</summary>", ""]
        lines += [
            f"- **{r.what}** `{render.printable(r.name)}`: {r.status}" + "".join(f"\n  - {cell(f)}" for f in r.flags)
            for r in p.regions
            if r.changed
        ]
        for r in p.regions:
            if r.changed and r.diff:
                lines += ["", "```diff", *(line.replace("```", "` ` `") for line in shown_diff(r.diff)), "```"]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


@click.command("watch")
@click.option(
    "--repo",
    "repo",
    required=True,
    type=NonEmptyPath(path_type=Path, file_okay=False),
    help="A verl git repository kept up to date (a checkout or a bare mirror; fetch it first).",
)
@click.option(
    "--since",
    "since",
    required=True,
    metavar="REF",
    help="The upstream version the patchset is on now, e.g. v0.7.0 (a release branch's tag is fine).",
)
@click.option(
    "--branch", "branch", default="main", show_default=True, metavar="REF", help="The upstream line to watch."
)
@click.option(
    "--skip",
    "skip",
    multiple=True,
    metavar="PATCH",
    help="Leave this patch out (repeatable), e.g. a top-level file that any README change would wake.",
)
@patchset_option
@json_option
@handled
def watch_cmd(
    repo: Path, since: str, branch: str, skip: tuple[str, ...], patchsets: tuple[str, ...], as_json: bool
) -> int:
    """Report the first commit of BRANCH since REF that changed any outcome or any code under a patch.

    Quiet (exit 0, one line) when nothing changed; exit 1 with a Markdown report otherwise, so a
    scheduled job opens an issue only then (docs/watch-upstream.md has a GitHub Actions recipe).

    \b
    patchctl watch --repo verl.git --since v0.7.0 > report.md
    """
    from patchctl.drift.refs import resolve
    from patchctl.drift.watch import watch

    root = open_repo(repo)
    sets = load_patchsets(patchsets)
    for pid in skip:
        find_patch(sets, pid)  # an unknown id is an error, not a silent no-op
    sets = [dataclasses.replace(ps, patches=tuple(p for p in ps.patches if p.id not in skip)) for ps in sets]
    found = watch(root, sets, resolve(root, "--since", since), resolve(root, "--branch", branch))
    if as_json:
        render.emit_json(found.to_json())
    elif not found.changed:
        click.echo(f"watch: nothing changed under any patch in {found.commits} commit(s) of {branch} since {since}")
    else:
        click.echo(watch_markdown(found, since, branch, str(repo)), nl=False)
    return 1 if found.changed else 0


def watch_markdown(found: Watch, since: str, branch: str, repo: str) -> str:
    """The report a scheduled job files: Markdown reads well in a terminal too."""
    first = found.first
    lines = [f"## Upstream changed under the patchset: {branch} since {since} ({found.commits} commits)", ""]
    if first is not None:
        lines += [f"First commit: `{first.sha[:12]}` {first.date[:10]} {render.printable(first.subject)}", ""]
    lines += ["| patch | first commit touching its code | outcome | outcome changed at |", "|---|---|---|---|"]
    for p in found.patches:
        if not p.changed:
            continue
        touched = f"`{p.touched.sha[:12]}` {render.printable(p.touched.subject)}" if p.touched else "-"
        moved = (
            f"`{p.outcome_changed.sha[:12]}` {render.printable(p.outcome_changed.subject)}"
            if p.outcome_changed
            else (render.printable(p.note) or "-")
        )
        lines.append(
            f"| {p.patch} | {touched.replace('|', '/')} | {p.before} -> {p.after} | {moved.replace('|', '/')} |"
        )
    to = first.sha[:12] if first else branch
    lines += [
        "",
        (
            f"Details: `patchctl drift --repo {repo} --from {since} --to {to}` "
            f"(or `--to {branch}`), then `patchctl bisect PATCH --good {since} --bad {branch} --repo {repo}`."
        ),
    ]
    return "\n".join(lines) + "\n"
