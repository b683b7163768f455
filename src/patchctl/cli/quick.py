"""``patchctl verify`` and ``patchctl migrate`` without click, for the command lines typed most.

``verify --json`` is measured against ``grep -rn`` (issue 39.13: at most 0.12 s), and loading
click, the command group and the options' types was a quarter of it. A command line made only
of ``--target``, ``--patchset``, ``--config``, ``--strict`` and ``--json``, each value given
plainly, is read here and run by :func:`patchctl.cli.verify_run.run`, which click's ``verify``
calls too. Anything else (``--help``, ``--env``, an option misspelt, a value click would refuse
or read differently, shell completion) returns None and goes to click, which has the
messages for it; tests/cli/test_quick.py runs both readers on the same command lines.

``migrate CLUSTER`` likewise (its whole command is measured against rsync's, and click with the
command group was a tenth of migrate's own start): the cluster, ``--target``, ``--patchset``,
``--config``, ``--host`` and the flags ``--dry-run``, ``--delete``, ``--checksum``,
``--allow-unverified`` and ``--json``, run by :func:`patchctl.cli.migrate_run.run`, which click's
``migrate`` calls too; ``--jobs``, ``--list``, ``--nodes`` and anything else go to click.
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
#: the options that may be given more than once, collected in a list
_REPEATED = ("patchsets", "hosts")


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
    read = _read(args, _VALUED, _FLAGS, arguments=False)
    return None if read is None else VerifyLine(**read[1])  # type: ignore[arg-type]


def _read(
    args: list[str], valued: dict[str, str], flags: dict[str, str], *, arguments: bool
) -> tuple[list[str], dict[str, object]] | None:
    """The arguments and options of a command line as click reads them, by the command's options
    that take a value (``valued``, each repeatable one collected in a list) and its flags; None
    where click must read the line itself. ``arguments``: words that are not options are the
    command's arguments (else a word is click's to report)."""
    if os.environ.get(COMPLETE_VAR):
        return None
    words: list[str] = []
    values: dict[str, object] = {}
    repeated: dict[str, list[str]] = {}
    rest = list(args)
    while rest:
        token = rest.pop(0)
        if token in flags:
            values[flags[token]] = True
            continue
        if arguments and not token.startswith("-"):
            words.append(token)
            continue
        name, eq, value = token.partition("=")
        if eq and name.startswith("--") and name in valued:
            token = name
        elif token in valued and rest:
            value = rest.pop(0)
        else:
            return None  # --help, --env, --jobs, -tVALUE, --, an unknown option, a value missing
        if not value or value.startswith("-"):
            return None  # click's message for an empty value; its reading of one like an option
        key = valued[token]
        if key in _REPEATED:
            repeated.setdefault(key, []).append(value)
        elif key == "target":
            values["target"] = value
        elif not _plain_file(value):
            return None
        else:
            values["config"] = Path(value)
    return words, {**values, **repeated}


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
    _run_quick(
        "verify_run",
        target=line.target,
        patchsets=tuple(line.patchsets),
        strict=line.strict,
        as_json=line.as_json,
        config=line.config,
    )


def _run_quick(module: str, **options: object) -> None:
    """``patchctl.cli.MODULE.run(**options)`` as click's command runs it: errors as ``handled``
    says them, the tree's lock held until the command ends, a Ctrl-C before or after as click
    says it; exits with its code."""
    from contextlib import ExitStack
    from importlib import import_module

    from patchctl.cli.echo import echo
    from patchctl.cli.errors import INTERRUPTED, handled
    from patchctl.cli.process import on_sigterm_unwind, quiet_if_reader_left

    on_sigterm_unwind()
    try:
        run = import_module(f"patchctl.cli.{module}").run
        with ExitStack() as stack:  # the tree's lock, released as the command ends
            handled(run)(**options, hold=stack.enter_context)
    except KeyboardInterrupt:  # before the command ran (its imports) or after: as click says it
        echo(err=True)
        echo("interrupted", err=True)
        sys.exit(INTERRUPTED)
    except SystemExit:
        quiet_if_reader_left()
        raise


#: ``migrate``'s options that take a value (``--host`` is repeatable), and its flags
_MIGRATE_VALUED = {**_VALUED, "--host": "hosts"}
_MIGRATE_FLAGS = {
    "--dry-run": "dry_run",
    "--delete": "delete",
    "--checksum": "checksum",
    "--allow-unverified": "allow_unverified",
    "--json": "as_json",
}


@record
class MigrateLine:
    """A ``migrate`` command line as click's ``migrate_cmd`` reads it (the options this reader
    takes; the others keep click's defaults)."""

    cluster: str
    target: str = "."
    patchsets: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    dry_run: bool = False
    delete: bool = False
    checksum: bool = False
    allow_unverified: bool = False
    as_json: bool = False
    config: Path | None = None


def read_migrate(args: list[str]) -> MigrateLine | None:
    """The options of ``patchctl migrate ARGS``, or None where click must read them."""
    read = _read(args, _MIGRATE_VALUED, _MIGRATE_FLAGS, arguments=True)
    if read is None or len(read[0]) != 1:
        return None  # no CLUSTER ("Missing argument"), or a second argument: click's message
    return MigrateLine(read[0][0], **read[1])  # type: ignore[arg-type]


def migrate(args: list[str]) -> None:
    """Run ``patchctl migrate ARGS`` and exit with its code; return at once where click must read
    the command line (see the module's docstring)."""
    line = read_migrate(args)
    if line is None:
        return
    _run_quick(
        "migrate_run",
        cluster=line.cluster,
        target=line.target,
        patchsets=tuple(line.patchsets),
        dry_run=line.dry_run,
        delete=line.delete,
        checksum=line.checksum,
        jobs=None,
        hosts=tuple(line.hosts),
        allow_unverified=line.allow_unverified,
        full_list=False,
        slurm_nodes="",
        as_json=line.as_json,
        config=line.config,
    )
