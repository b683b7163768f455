"""The one way patchctl runs another program: an argv list, never a shell string."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from patchctl.errors import CommandFailed, ToolMissing


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
    argv = [str(a) for a in argv]
    if shutil.which(argv[0]) is None and not Path(argv[0]).exists():
        raise ToolMissing(argv[0], "patchctl runs it as a subprocess")
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
