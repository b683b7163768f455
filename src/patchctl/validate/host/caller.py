"""What patchctl says to a host action that stays open (node, train): one JSON line per command.

patchctl writes ``{"cmd": "stop"}``, ``{"cmd": "tail"}``, ``{"cmd": "captured"}`` and heartbeat
``{"cmd": "beat"}`` lines to the action's stdin, and closes it when it goes. Each action used to
split those lines itself. One copy checked a whole read for the bytes ``"stop"``, so a stop line
split across two reads went unseen, and its second half then failed to parse. Another let a line
that was JSON but not an object end the supervisor with a traceback. Both read here now.

Lines are read off the descriptor, never through Python's ``sys.stdin``: its buffer reads ahead,
and a line sitting there is invisible to ``select`` (host/__main__._first_line).
"""

from __future__ import annotations

import json
import os
import select
import sys
import time


class Caller:
    """patchctl's end of stdin. Any line, a heartbeat or an unknown one, is word from patchctl
    (:attr:`heard` renews a lease); a line cut between two reads waits for its end."""

    def __init__(self, fd: int | None = None) -> None:
        self.fd = sys.stdin.fileno() if fd is None else fd
        self.heard = time.monotonic()
        self._partial = b""

    def wait(self, timeout: float | None) -> list[str] | None:
        """The commands of the lines that arrived within ``timeout`` seconds, in order: ``[]`` when
        nothing (or only part of a line) did, ``None`` once patchctl has closed its end."""
        if not select.select([self.fd], [], [], timeout)[0]:
            return []
        return self._read()

    def gone(self) -> bool:
        """Whether patchctl already said "stop" or closed its end, without waiting: a host action
        still starting checks this before it starts what would outlive a teardown that already
        looked. What else is waiting is read and dropped; nothing but heartbeats comes before "up"."""
        while select.select([self.fd], [], [], 0)[0]:
            said = self._read()
            if said is None or "stop" in said:
                return True
        return False

    def _read(self) -> list[str] | None:
        chunk = os.read(self.fd, 4096)
        if not chunk:
            return None
        self.heard = time.monotonic()
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        return [cmd for cmd in map(command, lines) if cmd is not None]


def command(line: bytes) -> str | None:
    """The line's ``cmd``; ``None`` for a blank line, one that is not JSON, not an object, or has no
    string ``cmd`` (ignored: the other side may be a newer patchctl)."""
    try:
        found = json.loads(line or b"{}")
    except ValueError:
        return None
    cmd = found.get("cmd") if isinstance(found, dict) else None
    return cmd if isinstance(cmd, str) else None
