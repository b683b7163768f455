"""The one way patchctl runs another program: an argv list, never a shell string."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Union

from patchctl.errors import CommandFailed, ToolMissing

#: what ``spawn`` accepts for a standard stream: subprocess.DEVNULL/PIPE, a file descriptor or a file
Stream = Union[int, IO[Any], None]


#: why a missing program is needed, when the caller does not say (``ToolMissing``'s second half)
RUNS_IT = "patchctl runs it as a subprocess"


def _argv(argv: Sequence[str], why: str = RUNS_IT, env: Mapping[str, str] | None = None) -> list[str]:
    """``argv`` as strings, its program checked first so a missing tool is one clear line.

    With ``env`` the program is looked up on that environment's PATH, as the child's exec does.
    """
    argv = [str(a) for a in argv]
    path = None if env is None else os.pathsep.join(os.get_exec_path(dict(env)))
    if shutil.which(argv[0], path=path) is None and not Path(argv[0]).exists():
        raise ToolMissing(argv[0], why)
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
    env: Mapping[str, str] | None = None,
    new_session: bool = False,
    why: str = RUNS_IT,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in the background and return it running (byte streams).

    For the few programs that cannot simply be run to the end: one whose output is read while it
    runs (rsync's per-file progress, the trainer's log), one kept alive beside other work (an ssh
    master connection, a Ray head node), one started before its input is known (a host's agent,
    given its request later). Same rules as :func:`run` — an argv list, never a shell, a missing
    program raises :class:`ToolMissing` (``why`` says what it is needed for) — but the caller owns
    the process: it must wait for it (or kill it) and judge its exit code. Standard streams default
    to /dev/null so a forgotten pipe can never block the child.

    ``env`` is the child's whole environment (None: this process's). ``new_session`` starts it in
    a session and process group of its own, so the caller can end it with everything it started
    (``os.killpg``) and a Ctrl-C at the terminal reaches patchctl alone, which then decides.
    """
    argv = _argv(argv, why, env)
    try:
        return subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=stderr, cwd=cwd,
                                env=dict(env) if env is not None else None, start_new_session=new_session)
    except FileNotFoundError:  # found by the check above, gone (or not executable by that name) at exec
        raise ToolMissing(argv[0], why) from None
