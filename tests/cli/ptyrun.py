"""Run patchctl with its stderr on a real terminal (a pty) and its stdout in a pipe."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import threading


def run_on_pty(args: list[str], env: dict[str, str], timeout: float = 300) -> tuple[int, str, str]:
    """Exit code, stdout (a pipe) and what the terminal on stderr received.

    Progress lines appear at once here (``PATCHCTL_PROGRESS_DELAY=0`` unless ``env`` says
    otherwise): on a fast machine a release unpacks before the default delay has passed."""
    leader, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # as a terminal window would
    child = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=terminal,
        env={**os.environ, "PATCHCTL_PROGRESS_DELAY": "0", **env},
    )
    os.close(terminal)
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=read)
    reader.start()
    out = child.stdout.read().decode() if child.stdout else ""
    code = child.wait(timeout=timeout)
    reader.join(timeout=10)
    os.close(leader)
    return code, out, b"".join(chunks).decode("utf-8", "replace")


def patchctl(*args: str) -> list[str]:
    return [sys.executable, "-m", "patchctl", *args]
