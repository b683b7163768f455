"""``--target`` for the commands: resolve it, then make the tree whole before anything reads it."""

from __future__ import annotations

from pathlib import Path

import click

from patchctl import journal
from patchctl.target import Target, resolve


def open_target(spec: str, config: Path | None = None) -> Target:
    """Resolve ``spec``; finish or roll back a change a killed patchctl left there, saying which.

    Every command that reads a tree goes through here, so a tree interrupted half-way is never
    verified, patched, migrated or trained on as it is.
    """
    tree = resolve(spec, config)
    done = journal.recover(tree.root)
    if done is not None:
        click.echo(done.sentence(tree.root), err=True)
    return tree
