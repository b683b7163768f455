"""Entry point: the ``patchctl`` command group. Only parses and dispatches.

Subcommands are imported on first use: ``patchctl migrate`` should not pay for the import of
the training or doctor modules (and the other way round). Start-up time matters because
``migrate`` and ``verify`` are measured against plain ``rsync`` and ``grep``.
"""

from __future__ import annotations

import importlib
import signal

import click

from patchctl import __version__

#: command name -> "module:attribute" of its click command, in the order ``--help`` lists them.
COMMANDS: dict[str, str] = {
    "apply": "patchctl.cli.patch_cmds:apply_cmd",
    "verify": "patchctl.cli.verify_cmd:verify_cmd",
    "revert": "patchctl.cli.patch_cmds:revert_cmd",
    "list": "patchctl.cli.patch_cmds:list_cmd",
    "matrix": "patchctl.cli.matrix_cmd:matrix_cmd",
    "migrate": "patchctl.cli.migrate_cmd:migrate_cmd",
    "doctor": "patchctl.cli.doctor_cmd:doctor_cmd",
    "train": "patchctl.cli.train_cmd:train_cmd",
    "validate": "patchctl.cli.validate_cmd:validate_cmd",
    "capture": "patchctl.cli.capture_cmd:capture_cmd",
    "refresh": "patchctl.cli.refresh_cmd:refresh_cmd",
    "drift": "patchctl.cli.drift_cmd:drift_cmd",
    "bisect": "patchctl.cli.bisect_cmd:bisect_cmd",
    "retire": "patchctl.cli.bisect_cmd:retire_cmd",
    "watch": "patchctl.cli.drift_cmd:watch_cmd",
}


class LazyGroup(click.Group):
    """A click group whose subcommands live in :data:`COMMANDS` and load when invoked."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = COMMANDS.get(cmd_name)
        if spec is None:
            return None
        module, attr = spec.split(":")
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command), spec
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="patchctl")
def cli() -> None:
    """Carry tagged local modifications of verl across releases and clusters."""


#: True once :func:`main` runs: the interpreter was started for this command, so its age is
#: patchctl's own start-up (``train`` counts it); False when ``cli`` is called in-process (tests).
LAUNCHED = False


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so ``finally`` blocks close ssh masters and stop children."""
    raise KeyboardInterrupt


def main() -> None:
    global LAUNCHED
    LAUNCHED = True
    signal.signal(signal.SIGTERM, _terminate)
    cli()
