"""`capture`: a fork's tagged edits, written as a patchset directory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from patchctl import lock
from patchctl.cli import render
from patchctl.cli.errors import handled
from patchctl.cli.options import SPEC, NonEmptyPath, config_option, json_option
from patchctl.config import expand
from patchctl.errors import BadOptionValue, MissingOption

if TYPE_CHECKING:  # `patchctl --help` loads every command module; the core loads when capture runs
    from patchctl.capture.model import Report


def _include(values: tuple[str, ...]) -> set[tuple[str, int]]:
    out = set()
    for v in values:
        path, sep, line = v.rpartition(":")
        if not sep or not path or not line.isdigit():
            raise BadOptionValue(
                "--include", v, "write FILE:LINE with FILE relative to the fork, e.g. verl/utils/x.py:42"
            )
        out.add((path, int(line)))
    return out


@click.command("capture")
@click.option(
    "--from",
    "fork",
    required=True,
    type=NonEmptyPath(path_type=Path, file_okay=False),
    help="The modified tree: a git checkout or a plain directory.",
)
@click.option(
    "--base",
    required=True,
    type=SPEC,
    help="What FORK was made from: a directory, verl==X.Y.Z, a name from patchctl.toml [targets], a git ref "
    "of FORK's repository (of --repo, when given), or `auto`: the commit of --repo FORK is nearest to.",
)
@click.option(
    "--repo",
    type=NonEmptyPath(path_type=Path, file_okay=False),
    default=None,
    help="A git clone of upstream: --base auto searches its commits, and a --base ref is read from it.",
)
@click.option(
    "--out",
    type=NonEmptyPath(path_type=Path, file_okay=False),
    default=None,
    help="The patchset directory to write (replaced if it already holds a patchset).",
)
@click.option("--tag", default="Uky", show_default=True, help="The comment tag that marks the fork's edits.")
@click.option("--all", "all_", is_flag=True, help="Capture untagged edits and new files too (listed as untagged).")
@click.option(
    "--include",
    multiple=True,
    metavar="FILE:LINE",
    help="Capture the edit at this fork line although it is ambiguous (repeatable).",
)
@click.option("--name", default=None, help="The patchset's name (default: the --out directory's name).")
@click.option("--dry-run", is_flag=True, help="Report what would be captured; write nothing.")
@json_option
@config_option
@handled
def capture_cmd(
    fork: Path,
    base: str,
    repo: Path | None,
    out: Path | None,
    tag: str,
    all_: bool,
    include: tuple[str, ...],
    name: str | None,
    dry_run: bool,
    as_json: bool,
    config: Path | None,
) -> int:
    """Turn FORK's edits tagged `# TAG` into a patchset that re-creates them on BASE.

    Each edit becomes the narrowest kind that reproduces it exactly (keyword-rename, prelude,
    shell-env, add-file), other Python edits the structural kind; configs go by key (config-key),
    requirements by package, other text by hunk, binary files as blobs, moves and deletions as
    rename-file and delete-file. The result is proven by
    applying it to BASE before anything is written; edits that cannot be placed without
    guessing are listed with file and line; the exit code is then 1 unless a proven patchset
    of the other edits was written.
    """
    from patchctl.capture.run import capture

    if out is None and not dry_run:
        raise MissingOption("capture", "pass --out DIR (the patchset to write), or --dry-run to only report")
    if out is not None and not dry_run:  # one capture at a time writes (and mends) --out: see lock.beside
        click.get_current_context().with_resource(lock.hold(lock.beside(out), what=f"--out {out}"))
    if base != "auto":
        base = expand(base, config)  # a [targets] name, as everywhere a tree is named (#19)
    report = capture(
        fork, base, None if dry_run else out, tag=tag, all_=all_, include=_include(include), name=name, repo=repo
    )
    if as_json:
        render.emit_json(report.to_json())
    else:
        _show(report, dry_run)
    return 0 if report.ok else 1


def _show(report: Report, dry_run: bool) -> None:
    if report.found is not None:
        f = report.found
        rows = [
            [("* " if c is f.best else "  ") + c.commit[:12], c.date[:10], str(c.paths), str(c.lines)] for c in f.shown
        ]
        render.table(
            f"base: {f.compared} commits of {f.repo} compared with FORK (fewest paths, then fewest lines)",
            ["commit", "date", "paths differing", "lines differing"],
            rows,
        )
    rows = [[p.id, p.kind, p.where, "tagged" if p.tagged else "untagged (--all)"] for p in report.patches]
    render.table(f"capture {report.fork} against {report.base}", ["patch", "kind", "where (fork)", "tag"], rows)
    for note in report.notes:
        click.echo(f"note: {note}")
    for x in report.left_out:
        click.echo(f"left out: {render.quote_path(x.path)}:{x.line}: {render.printable(x.reason)}", err=True)
    if report.out and report.complete:
        click.echo(f"wrote {len(report.patches)} patch(es) to {report.out}; proven byte-identical on {report.base}")
    elif report.out:
        lost = f"; {len(report.left_out)} edit(s) left out are not in it" if report.left_out else ""
        click.echo(
            f"wrote {len(report.patches)} patch(es) to {report.out}; proven on {report.base} for the edits "
            f"captured{lost}"
        )
        if report.outside:
            names = ", ".join(render.quote_path(p) for p in report.outside[:5])
            more = f" and {len(report.outside) - 5} more" if len(report.outside) > 5 else ""
            click.echo(
                f"outside the captured scope: {len(report.outside)} file(s) the fork changed are not "
                f"re-created by it: {names}{more} (the notes above say why)"
            )
    elif dry_run:
        click.echo(f"{len(report.patches)} patch(es) would be written (dry run)")
