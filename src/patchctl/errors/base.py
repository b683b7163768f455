"""The root of every user-facing error, and the helpers their messages share.

Kept apart so that each area's module of conditions imports only this, never another area.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``" (did you mean 'gpu'?)"`` for the closest of ``known`` to a mistyped ``name``, else ``""``."""
    import difflib  # here: only a name not found needs it (~1 ms of every start-up)

    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def looked_in(paths: Iterable[Path | str]) -> str:
    """``"no config file (looked for ./patchctl.toml, ...)"``: a missing config says where it was sought."""
    return "no config file (looked for " + ", ".join(str(Path(p).absolute()) for p in paths) + ")"


class PatchctlError(Exception):
    """An expected failure that the CLI turns into one line (or, with ``--json``, one object).

    Its exit code is 2, "could not run as asked": a check that ran and failed is 1, and scripts
    must be able to tell the two apart (#19). ``fix`` is what to do, where a subclass knows it.
    """

    #: the process's exit code (see ``patchctl --help``)
    exit_code = 2
    #: the next step, as ``--json`` errors give it in ``hint``; None: the message's last clause
    fix: str | None = None
