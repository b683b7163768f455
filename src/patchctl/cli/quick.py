"""``patchctl verify`` without click, for the command lines a person or a hook types most.

``verify --json`` is measured against ``grep -rn`` (issue 39.13: at most 0.12 s), and loading
click, the command group and the options' types was a quarter of it. A command line made only
of ``--target``, ``--patchset``, ``--config``, ``--strict`` and ``--json``, each value given
plainly, is read here and run by :func:`patchctl.cli.verify_run.run`, which click's ``verify``
calls too. Anything else (``--help``, ``--env``, an option misspelt, a value click would refuse
or read differently, shell completion) returns None and goes to click, which has the
messages for it; tests/cli/test_quick.py runs both readers on the same command lines.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from patchctl.cli import COMPLETE_VAR
from patchctl.records import field, record

#: option -> the field it sets: ``--target``, ``--patchset`` and ``--config`` take a value
_VALUED = {"--target": "target", "-t": "target", "--patchset": "patchsets", "-p": "patchsets", "--config": "config"}
_FLAGS = {"--strict": "strict", "--json": "as_json"}


@record
class VerifyLine:
    """A ``verify`` command line as click's ``verify_cmd`` reads it."""

    target: str = "."
    patchsets: list[str] = field(default_factory=list)
    strict: bool = False
    as_json: bool = False
    config: Path | None = None


def read_verify(args: list[str]) -> VerifyLine | None:
    """The options of ``patchctl verify ARGS``, or None where click must read them."""
    if os.environ.get(COMPLETE_VAR):
        return None
    line = VerifyLine()
    rest = list(args)
    while rest:
        token = rest.pop(0)
        if token in _FLAGS:
            setattr(line, _FLAGS[token], True)
            continue
        name, eq, value = token.partition("=")
        if eq and name.startswith("--") and name in _VALUED:
            token = name
        elif token in _VALUED and rest:
            value = rest.pop(0)
        else:
            return None  # --help, --env, -tVALUE, an unknown option, an argument, a value missing
        if not value or value.startswith("-"):
            return None  # click's message for an empty value; its reading of one like an option
        key = _VALUED[token]
        if key == "patchsets":
            line.patchsets.append(value)
        elif key == "target":
            line.target = value
        elif not _plain_file(value):
            return None
        else:
            line.config = Path(value)
    return line


def _plain_file(value: str) -> bool:
    """A ``--config`` click takes as it is: nothing there yet, or a file it may read (click's
    ``Path(dir_okay=False)`` refuses a folder and an unreadable file, with its own message)."""
    try:
        isdir = os.path.isdir(value)
    except ValueError:  # a NUL in the name: click's to report
        return False
    if isdir:
        return False
    return not os.path.lexists(value) or (os.path.exists(value) and os.access(value, os.R_OK))


def verify(args: list[str]) -> None:
    """Run ``patchctl verify ARGS`` and exit with its code; return at once where click must read
    the command line (see the module's docstring)."""
    line = read_verify(args)
    if line is None:
        return
    from contextlib import ExitStack

    from patchctl.cli.echo import echo
    from patchctl.cli.errors import INTERRUPTED, handled
    from patchctl.cli.process import on_sigterm_unwind, quiet_if_reader_left

    on_sigterm_unwind()
    try:
        from patchctl.cli import verify_run

        with ExitStack() as stack:  # the tree's lock, released as the command ends
            handled(verify_run.run)(
                target=line.target,
                patchsets=tuple(line.patchsets),
                strict=line.strict,
                as_json=line.as_json,
                config=line.config,
                hold=stack.enter_context,
            )
    except KeyboardInterrupt:  # before the command ran (its imports) or after: as click says it
        echo(err=True)
        echo("interrupted", err=True)
        sys.exit(INTERRUPTED)
    except SystemExit:
        quiet_if_reader_left()
        raise
