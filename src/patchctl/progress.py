"""One line on stderr while patchctl waits: what it is doing, a counter, the seconds so far.

The waits are deep in the core (a release download inside matrix's thread pool, capture's
proof, a migrate's first transfer), so the core reports them here instead of threading a
callback through every signature; this module alone decides whether anything is drawn. It
draws only when stderr is a terminal (never into a pipe, a log or ``--json`` consumers'
stderr), only once a wait passes :data:`DELAY` (quick steps stay silent), with plain ASCII and
no colour (``NO_COLOR`` and ``TERM=dumb`` terminals are safe), and it erases its line when the
wait ends, so the output that follows is what it would have been without it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TextIO

#: seconds a wait lasts before its line appears (``PATCHCTL_PROGRESS_DELAY`` overrides it: the
#: tests set 0, since on a fast machine a release unpacks in less than the default)
DELAY = float(os.environ.get("PATCHCTL_PROGRESS_DELAY", "0.3"))
#: seconds between redraws (the spinner's speed)
TICK = 0.1
_SPINNER = "|/-\\"


@dataclass
class Step:
    """A wait being reported: ``text``, and ``done`` of ``total`` when it counts something."""

    text: str
    total: int | None = None
    done: int = 0
    started: float = field(default_factory=time.monotonic)

    def say(self, text: str) -> None:
        """What the wait is at now (called from any thread)."""
        with _LOCK:
            self.text = text

    def advance(self, note: str = "") -> None:
        """One more of ``total`` done; ``note`` (e.g. the version just finished) replaces the text's tail."""
        with _LOCK:
            self.done += 1
            if note:
                self.text = note

    def line(self, frame: int, width: int) -> str:
        count = f" {self.done}/{self.total}" if self.total else ""
        text = f"{_SPINNER[frame % len(_SPINNER)]} {self.text}{count}  {time.monotonic() - self.started:.0f} s"
        return text[: max(width - 1, 10)]  # one column spare: a full line would wrap on some terminals


_LOCK = threading.Lock()
_ACTIVE: list[Step] = []
_drawer: threading.Thread | None = None
_stop = threading.Event()


def enabled(stream: TextIO | None = None) -> bool:
    """A terminal that can take a redrawn line: stderr is a TTY and TERM is not ``dumb``; never
    in a worker process (matrix's), whose line would fight its parent's."""
    # a worker process has multiprocessing loaded already (its parent's, forked, or its own, for
    # spawn): a command that never loaded it is no worker, and need not pay for its import
    # (multiprocessing with pickle: ~5 ms, which migrate paid at its first line of progress)
    mp = sys.modules.get("multiprocessing")
    if mp is not None and mp.parent_process() is not None:
        return False
    stream = stream or sys.stderr
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


@contextmanager
def step(text: str, total: int | None = None) -> Iterator[Step]:
    """Report a wait for the ``with`` block; nested and concurrent steps show the newest."""
    current = Step(text, total)
    if not enabled():
        yield current
        return
    global _drawer
    with _LOCK:
        _ACTIVE.append(current)
        if _drawer is None:
            _stop.clear()
            _drawer = threading.Thread(target=_draw, args=(sys.stderr,), name="patchctl-progress", daemon=True)
            _drawer.start()
    try:
        yield current
    finally:
        with _LOCK:
            _ACTIVE.remove(current)
            last, drawer = not _ACTIVE, _drawer
            if last:
                _drawer = None
                _stop.set()
        if last and drawer is not None:
            drawer.join()


def _draw(stream: TextIO) -> None:
    frame, shown = 0, False
    while True:  # look first, then wait: with no delay the line appears at once
        with _LOCK:
            current = _ACTIVE[-1] if _ACTIVE else None
            if current is not None and time.monotonic() - current.started >= DELAY:
                stream.write("\r\033[K" + current.line(frame, _width(stream)))
                stream.flush()
                shown, frame = True, frame + 1
        if _stop.wait(TICK):
            break
    if shown:
        stream.write("\r\033[K")  # erase it: what follows starts at the line's beginning
        stream.flush()


def _width(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80  # a terminal that never set its size says 0
    except (OSError, ValueError):
        return 80
