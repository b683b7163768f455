"""``click.echo`` for plain text, without importing click.

A ``verify --json`` is measured against ``grep -rn`` and click's import alone was a quarter of
it (issue 39.13), so the commands' output and error paths write through :func:`echo`, which
loads click only where click's echo would do something a plain write does not: strip the
colour codes of a text bound for a pipe, or re-encode for a stream Python opened as ASCII.
"""

from __future__ import annotations

import codecs
import sys


def echo(message: str = "", nl: bool = True, err: bool = False, color: bool | None = None) -> None:
    """Write ``message`` (and a newline) to stdout or stderr and flush, as ``click.echo`` does.

    ``color``: as click's, True keeps colour codes, False strips them, None strips them where the
    stream is no terminal; a text without any is written as it is either way."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:  # no standard stream at all: click writes nothing either
        return
    if ("\x1b" in message and not color) or _rewrapped(stream):
        import click

        click.echo(message, nl=nl, err=err, color=color)
        return
    stream.write(message + "\n" if nl else message)
    stream.flush()


def _rewrapped(stream: object) -> bool:
    """click's test for a stream it writes to through a wrapper of its own (one without an
    encoding or error mode, or an ASCII one, as under ``LANG=C`` on an old Python): click then
    writes with replacements where a plain write would fail."""
    encoding = getattr(stream, "encoding", None)
    if not encoding or getattr(stream, "errors", None) is None:
        return True
    try:
        return codecs.lookup(encoding).name == "ascii"
    except LookupError:
        return False
