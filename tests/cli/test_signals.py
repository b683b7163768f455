"""SIGTERM ends a command the way Ctrl-C does: cleanly, exit 130, a one-line message."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path


def _reading_stdin(pid: int) -> bool:
    """Whether the process sits in read(0, ...) (Linux: /proc/PID/syscall starts with "0 0x0")."""
    try:
        return Path(f"/proc/{pid}/syscall").read_text().startswith("0 0x0 ")
    except OSError:
        return False


def test_sigterm_unwinds_like_ctrl_c() -> None:
    # `doctor -` blocks reading stdin: a long-running command that owns no other process
    proc = subprocess.Popen(
        [sys.executable, "-c", "from patchctl.cli.main import main; main()", "doctor", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not _reading_stdin(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (out, err)
    assert err.strip() == "interrupted"
