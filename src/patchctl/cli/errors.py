"""The one error handler: expected errors are one line and exit 1; Ctrl-C is 130; bugs are 3."""

from __future__ import annotations

import functools
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import click

from patchctl.errors import FileSystemFailed, PatchctlError
from patchctl.oserrors import ENVIRONMENT, describe
from patchctl.quoting import printable

F = TypeVar("F", bound=Callable[..., Any])


def handled(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            code = fn(*args, **kwargs)
        except PatchctlError as exc:  # printable(): one line, whatever a name in it holds
            click.echo(f"error: {printable(str(exc))}", err=True)
            sys.exit(1)
        except BrokenPipeError:  # `patchctl list | head`: the reader left, nothing to report
            sys.stderr.close()
            sys.exit(0)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except OSError as exc:
            if exc.errno not in ENVIRONMENT:
                crash(exc)
            failed = FileSystemFailed(exc.filename or "patchctl", *describe(exc))
            click.echo(f"error: {printable(str(failed))}", err=True)
            sys.exit(1)
        except Exception as exc:  # a bug: crash() keeps its traceback in a file
            crash(exc)
        sys.exit(code or 0)

    return wrapper  # type: ignore[return-value] # wrapper keeps fn's signature, which ParamSpec cannot say through click


def crash(exc: BaseException) -> NoReturn:
    """A bug: keep the traceback, but in a file, and say where."""
    fd, log = tempfile.mkstemp(prefix="patchctl-crash-", suffix=".log")
    with os.fdopen(fd, "w") as f:
        traceback.print_exception(exc, file=f)
    click.echo(f"error: internal error {type(exc).__name__}: {printable(str(exc))} (traceback in {log}); "
               "please report it", err=True)
    sys.exit(3)
