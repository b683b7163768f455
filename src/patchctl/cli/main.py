"""Entry point: the ``patchctl`` command group. Only parses and dispatches."""

from __future__ import annotations

import click

from patchctl import __version__
from patchctl.cli.doctor_cmd import doctor_cmd
from patchctl.cli.migrate_cmd import migrate_cmd
from patchctl.cli.patch_cmds import apply_cmd, list_cmd, revert_cmd
from patchctl.cli.train_cmd import train_cmd
from patchctl.cli.verify_cmd import verify_cmd


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="patchctl")
def cli() -> None:
    """Carry tagged local modifications of verl across releases and clusters."""


for command in (apply_cmd, verify_cmd, revert_cmd, list_cmd, migrate_cmd, doctor_cmd, train_cmd):
    cli.add_command(command)


def main() -> None:
    cli()
