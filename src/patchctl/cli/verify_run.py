"""`verify` of patches, without click: what ``patchctl verify`` runs once its options are read.

click reads the options of ``patchctl verify`` (:mod:`patchctl.cli.verify_cmd`), and so does
:mod:`patchctl.cli.quick` for the plain command lines, without loading click; both call
:func:`run`, so the two print the same. Nothing here imports click.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from patchctl import lock
from patchctl.cli import render
from patchctl.cli.echo import echo
from patchctl.cli.targets import open_target
from patchctl.patchsets.loader import load_patchsets
from patchctl.verify.patches import verify


def run(
    target: str,
    patchsets: tuple[str, ...],
    strict: bool,
    as_json: bool,
    config: Path | None,
    repo: Path | None = None,
    hold: Callable[[lock.Held], lock.Held] | None = None,
) -> int:
    """Check every patch of ``patchsets`` in ``target``, print the report, return the exit code.

    ``hold`` keeps the tree's lock until the command ends (see :func:`~patchctl.cli.targets.open_target`)."""
    sets = load_patchsets(patchsets)
    tree = open_target(target, config, hold=hold)
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
            echo(f"\n{c.patch}: how it differs\n{c.detail}")
    echo(f"tagged lines: {len(report.accounted)} accounted for by patches, {len(report.unaccounted)} not")
    for h in report.unaccounted:
        # "stray", not git's "untracked": the file may well be tracked; no patch accounts for the line
        echo(f"  stray tag  {render.quote_path(h.path)}:{h.line}: {render.printable(h.text.strip())}")
    if report.unaccounted:
        echo("  (hand edits no patch accounts for: worth capturing into a patchset)")
    for rel in report.leftovers:
        echo(f"  leftover temp file  {render.quote_path(rel)}: a write was cut off here; delete it (rm {rel!r})")
    for waiting in report.conflicts:
        echo(f"  needs resolution  {render.printable(waiting)}: edit its conflict markers, then run patchctl refresh")
    echo("verify: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1
