"""The one way patchctl runs another program: an argv list, never a shell string."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Union

from patchctl.errors import CommandFailed, ToolMissing

#: what ``spawn`` accepts for a standard stream: subprocess.DEVNULL/PIPE, a file descriptor or a file
Stream = Union[int, IO[Any], None]


def _argv(argv: Sequence[str]) -> list[str]:
    """``argv`` as strings, its program checked first so a missing tool is one clear line."""
    argv = [str(a) for a in argv]
    if shutil.which(argv[0]) is None and not Path(argv[0]).exists():
        raise ToolMissing(argv[0], "patchctl runs it as a subprocess")
    return argv


def run(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    input: str | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` and capture text output.

    With ``check`` a non-zero exit raises :class:`CommandFailed`, whose message carries the
    command, the exit code and the tail of stderr, so callers need no error plumbing of their own.
    """
    argv = _argv(argv)
    done = subprocess.run(
        argv,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if check and done.returncode != 0:
        raise CommandFailed(argv, done.returncode, done.stderr or done.stdout)
    return done


def spawn(
    argv: Sequence[str],
    *,
    stdin: Stream = subprocess.DEVNULL,
    stdout: Stream = subprocess.DEVNULL,
    stderr: Stream = subprocess.DEVNULL,
    cwd: Path | str | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in the background and return it running (byte streams).

    For the few programs that cannot simply be run to the end: one whose output is read while it
    runs (rsync's per-file progress), one kept alive beside other work (an ssh master connection),
    one started before its input is known (a host's agent, given its request later). Same rules
    as :func:`run` — an argv list, never a shell, a missing program raises :class:`ToolMissing` —
    but the caller owns the process: it must wait for it (or kill it) and judge its exit code.
    Standard streams default to /dev/null so a forgotten pipe can never block the child.
    """
    return subprocess.Popen(_argv(argv), stdin=stdin, stdout=stdout, stderr=stderr, cwd=cwd)
