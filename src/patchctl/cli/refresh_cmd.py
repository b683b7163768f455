"""`refresh`: record the conflicts resolved in a tree into the patchset (``quilt refresh``)."""

from __future__ import annotations

from pathlib import Path

import click

from patchctl.cli import render
from patchctl.cli.errors import handled
from patchctl.cli.options import config_option, json_option, patchset_option, target_option
from patchctl.cli.targets import Use, open_target
from patchctl.patchsets.loader import load_patchsets
from patchctl.patchsets.refresh import refresh


@click.command("refresh")
@target_option
@patchset_option
@json_option
@config_option
@handled
def refresh_cmd(target: str, patchsets: tuple[str, ...], as_json: bool, config: Path | None) -> int:
    """Record the conflicts resolved in TARGET into the patchset's resolutions.toml.

    After `apply --conflicts=markers`, edit each conflict (keep what the tree should hold, drop
    the marker lines; for a file the patch deletes, empty or delete the file), then run this.
    Each resolution is keyed by the patch id and a hash of upstream's text there, and replayed
    by apply and matrix wherever the same conflict comes back. A conflict left as upstream's
    text records "keep upstream": the patch is dropped on this verl version and later ones.
    """
    sets = load_patchsets(patchsets)
    tree = open_target(target, config, Use.WRITE)
    done = refresh(tree, sets)
    if as_json:
        render.emit_json([d.to_json() for d in done])
        return 0
    for d in done:
        what = f"recorded (key {d.context[:12]})"
        if d.kept:
            where = f"verl {d.since} and later" if d.since else "trees where upstream's text there is this one"
            what = (
                f"kept upstream's text: recorded as keep-upstream (key {d.context[:12]}), the patch dropped on {where}"
            )
        what += "; the file is deleted, as the patch deletes it" if d.deleted else ""
        click.echo(f"{d.patch} in {render.quote_path(d.path)}: {what}")
    kept = sum(d.kept for d in done)
    also = f" ({kept} keeping upstream's text)" if kept else ""
    click.echo(f"refresh: {len(done)} resolution(s) recorded{also}; the tree's conflicts are cleared")
    return 0
