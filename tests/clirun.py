"""patchctl's CLI run in-process, as most tests read it: the exit code, and stdout alone for a
``--json`` run (its stderr would break the JSON) or stdout and stderr together otherwise."""

from __future__ import annotations

from click.testing import CliRunner

from patchctl.cli.main import cli


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout if "--json" in args else result.output
