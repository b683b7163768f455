"""Entry point: the ``patchctl`` command group. Only parses and dispatches.

Subcommands are imported on first use: ``patchctl migrate`` should not pay for the import of
the training or doctor modules (and the other way round). Start-up time matters because
``migrate`` and ``verify`` are measured against plain ``rsync`` and ``grep``.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

import click

from patchctl import __version__
from patchctl.cli import COMPLETE_VAR
from patchctl.cli.errors import EXIT_CODES, INTERRUPTED, usage_error
from patchctl.cli.process import on_sigterm_unwind, quiet_if_reader_left
from patchctl.errors.base import did_you_mean

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
    "completion": "patchctl.cli.completion:completion_cmd",
}


def summary(help_text: str, limit: int) -> str:
    """A command's line in ``patchctl --help``: its first sentence, never cut mid-word.

    click's own short help stops at ``limit`` characters with "...", which cut most of ours
    mid-sentence (#19). A first sentence longer than the line keeps its first clause (before
    ``;``), which is whole; a sentence without one is kept and wrapped by the help formatter.
    """
    text = " ".join(help_text.split("\n\n", 1)[0].split())
    first = text.split(". ", 1)[0].rstrip(".")
    if len(first) > limit and "; " in first:
        first = first.split("; ", 1)[0]
    return first + "."


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

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """click's lookup, with git's "did you mean" for a mistyped command (``patchctl aply``)."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS:
            ctx.fail(f"No such command {name!r}.{did_you_mean(name, COMMANDS)}")
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        commands = [(name, cmd) for name in self.list_commands(ctx) if (cmd := self.get_command(ctx, name))]
        limit = formatter.width - 6 - max(len(name) for name, _ in commands)
        rows = [(name, cmd.short_help or summary(cmd.help or "", limit)) for name, cmd in commands if not cmd.hidden]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(self, args: Sequence[str] | None = None, *rest: Any, **kwargs: Any) -> Any:
        """click's main, with the exit codes of :mod:`patchctl.cli.errors` for its own errors too:
        a usage error is 2 (and JSON under ``--json``), a Ctrl-C before a command runs is 130."""
        argv = list(sys.argv[1:] if args is None else args)
        if kwargs.get("standalone_mode", True) is False:
            return super().main(argv, *rest, **kwargs)
        kwargs["standalone_mode"] = False
        try:
            code = super().main(argv, *rest, **kwargs)
        except click.ClickException as exc:
            usage_error(exc, "--json" in argv)
        except click.Abort:
            click.echo("interrupted", err=True)
            sys.exit(INTERRUPTED)
        sys.exit(code if isinstance(code, int) else 0)


def _chdir(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """``-C DIR`` as git has it: everything after runs as if started in DIR (paths, ./patchctl.toml,
    the upward search for the tree)."""
    if value is not None:
        os.chdir(value)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=EXIT_CODES + " Shell completion: `patchctl completion --help`.",
)
@click.version_option(__version__, prog_name="patchctl")
@click.option(
    "-C",
    "chdir",
    metavar="DIR",
    type=click.Path(exists=True, file_okay=False),
    callback=_chdir,
    expose_value=False,
    help="Run as if patchctl was started in DIR.",
)
def cli() -> None:
    """Carry tagged local modifications of verl across releases and clusters."""


#: True once :func:`main` runs: the interpreter was started for this command, so its age is
#: patchctl's own start-up (``train`` counts it); False when ``cli`` is called in-process (tests).
LAUNCHED = False


def main() -> None:
    global LAUNCHED
    LAUNCHED = True
    on_sigterm_unwind()
    try:
        # named, not derived from the program name: `python -m patchctl` completes as `patchctl` does
        cli(complete_var=COMPLETE_VAR)
    except SystemExit:
        quiet_if_reader_left()
        raise
