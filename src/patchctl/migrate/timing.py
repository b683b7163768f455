"""Where one host's time goes, added up phase by phase as its run goes (see ``results.Phases``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from patchctl.migrate.results import Phases


class PhaseClock:
    """Seconds per phase for one host. A host's steps run one after another on its own thread,
    so plain sums suffice; the file set's time is the shared preparation's, given at the start."""

    def __init__(self, fileset: float) -> None:
        self.fileset = fileset
        self.transfer = self.verify = self.render = 0.0
        #: files the host's last check read to hash (it says so in its reply)
        self.files_read = 0

    @contextmanager
    def transferring(self) -> Iterator[None]:
        began = time.monotonic()
        try:
            yield
        finally:
            self.transfer += time.monotonic() - began

    def checked(self, seconds: float, reply: dict[str, Any]) -> None:
        """One check of ``seconds`` (the round trip) whose reply says how long the host spent
        writing the generated files and how many files it read. The reply comes from the host:
        a figure that is not a number within the round trip counts as none."""
        render = reply.get("render_seconds")
        render = float(render) if isinstance(render, (int, float)) and 0 <= render <= seconds else 0.0
        read = reply.get("read")
        self.files_read = read if type(read) is int and read >= 0 else 0
        self.render += render
        self.verify += seconds - render

    def phases(self) -> Phases:
        return Phases(self.fileset, self.transfer, self.verify, self.render)
