"""The one error handler, and the exit codes every command shares.

A script must tell "the check ran and found a failure" from "it could not run" (#19), so an
expected error (:class:`PatchctlError`, a click usage error) is never 1. With ``--json`` an
error is one JSON object on stdout too, so a caller that parses stdout always gets JSON.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from patchctl.cli.echo import echo
from patchctl.errors import FileSystemFailed, PatchctlError
from patchctl.errors.usage import ConfigProblems
from patchctl.oserrors import ENVIRONMENT, describe
from patchctl.quoting import printable

if TYPE_CHECKING:
    import click

F = TypeVar("F", bound=Callable[..., Any])

OK = 0
CHECK_FAILED = 1
USAGE = 2
INTERNAL = 3
INTERRUPTED = 130

#: the ``--help`` epilog and the README's table say the same
EXIT_CODES = (
    "Exit codes: 0 ok; 1 a check ran and failed; 2 usage, config or input error (could not run as asked); "
    "3 internal error (a bug: the message names a traceback file); 130 interrupted."
)


def hint_of(exc: BaseException) -> str:
    """The next step: the error's own ``fix``, else the clause after its message's last ``;``
    (every message ends "...; what to do")."""
    fix = getattr(exc, "fix", None)
    if isinstance(fix, str) and fix:
        return fix
    text = str(exc)
    return text.rsplit("; ", 1)[1] if "; " in text else ""


def fail(message: str, code: int, hint: str, as_json: bool, listed: bool = False) -> NoReturn:
    """Say why the command stopped (stderr, or one JSON object on stdout) and exit with ``code``.

    ``listed``: the message is a list of problems whose parts are escaped already
    (:class:`~patchctl.errors.usage.ConfigProblems`), so its own line breaks stay."""
    text = message if listed else printable(message)
    if as_json:
        echo(json.dumps({"code": code, "error": text, "hint": printable(hint)}))
    else:
        echo(f"error: {text}", err=True)
    sys.exit(code)


def handled(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = bool(kwargs.get("as_json"))
        try:
            code = fn(*args, **kwargs)
        except PatchctlError as exc:  # printable(): one line, whatever a name in it holds
            fail(str(exc), exc.exit_code, hint_of(exc), as_json, listed=isinstance(exc, ConfigProblems))
        except BrokenPipeError:  # `patchctl list | head`: the reader left, nothing to report
            devnull = os.open(os.devnull, os.O_WRONLY)  # what is still buffered goes nowhere, quietly
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
            sys.exit(0)
        except KeyboardInterrupt:
            if as_json:
                fail("interrupted", INTERRUPTED, "", as_json)
            echo("interrupted", err=True)
            sys.exit(INTERRUPTED)
        except SystemExit:
            raise
        except OSError as exc:
            if exc.errno not in ENVIRONMENT:
                crash(exc, as_json)
            failed = FileSystemFailed(exc.filename or "patchctl", *describe(exc))
            fail(str(failed), failed.exit_code, hint_of(failed), as_json)
        except Exception as exc:
            if from_click(exc):
                raise
            crash(exc, as_json)  # a bug: crash() keeps its traceback in a file
        sys.exit(code or OK)

    return wrapper  # type: ignore[return-value] # wrapper keeps fn's signature, which ParamSpec cannot say through click


def from_click(exc: BaseException) -> bool:
    """Whether ``exc`` is click's own (a usage error, ``ctx.exit()``), for click to show and end
    with. Without click loaded (``verify``'s start without click, :mod:`patchctl.cli.quick`)
    nothing can have raised one, so click is not imported to find out."""
    click = sys.modules.get("click")
    return click is not None and isinstance(exc, (click.exceptions.Exit, click.ClickException))


def crash(exc: BaseException, as_json: bool = False) -> NoReturn:
    """A bug: keep the traceback, but in a file, and say where."""
    import tempfile  # here, as traceback: only a crash needs them, every command's start-up paid for them
    import traceback

    fd, log = tempfile.mkstemp(prefix="patchctl-crash-", suffix=".log")
    with os.fdopen(fd, "w") as f:
        traceback.print_exception(exc, file=f)
    fail(
        f"internal error {type(exc).__name__}: {exc} (traceback in {log}); please report it",
        INTERNAL,
        "please report it",
        as_json,
    )


def usage_error(exc: click.ClickException, as_json: bool) -> NoReturn:
    """A click usage error (unknown option, bad value, missing argument): code 2 on every command.

    click gives a few of its own errors (an unreadable ``click.File``) code 1, which would read
    as a failed check.
    """
    import click  # loaded already: click raised ``exc``

    if not as_json:
        exc.show()
        sys.exit(USAGE)
    hint = ""
    if isinstance(exc, click.UsageError) and exc.ctx is not None:
        hint = f"see `{exc.ctx.command_path} --help`"
    fail(exc.format_message(), USAGE, hint, as_json)
