"""What every ``patchctl`` process does at its start and end, with or without click loaded."""

from __future__ import annotations

import os
import signal
import sys


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so ``finally`` blocks close ssh masters and stop children."""
    raise KeyboardInterrupt


def on_sigterm_unwind() -> None:
    signal.signal(signal.SIGTERM, _terminate)


def quiet_if_reader_left() -> None:
    """Flush stdout now; if its reader left (``patchctl ... | head``), exit 0 as the command did.

    Output still buffered when the interpreter ends is flushed after every handler has run, and a
    closed pipe there made Python print "Exception ignored" and exit 120. The reader taking only
    the first lines is a normal way to read output, so the code stays the command's own (0 when
    it succeeded); stdout goes to /dev/null so nothing is flushed into the closed pipe again.
    """
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
