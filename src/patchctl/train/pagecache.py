"""Reading the trainer environment's large shared libraries into the page cache at launch.

On a machine that has not run the stack since it booted (a fresh cloud node, a cluster after
maintenance), every process of verl's start-up chain maps the CUDA, torch and vLLM libraries it
needs and faults their pages in from disk as it touches them, one process after another: the
driver, the TaskRunner, the FSDP worker, the vLLM server and engine core each wait on the disk in
turn. Read ahead from one side process at launch, while the driver is still importing, those
reads overlap with the chain's CPU-bound imports, and every later process finds the pages in
memory. On a machine whose page cache is warm this costs a read from memory (about a second per
few GiB on one core) and saves nothing.

Best effort by design, as :mod:`.modelinfo`: :mod:`.pageread` runs as a script in the trainer's
interpreter (``--python``) with the trainer's environment, so it walks the same ``sys.path`` the
workers import from; it reads at most ``pageread.BUDGET`` bytes and never more than a quarter of
the memory available; a file that cannot be read is skipped; it ends with the run if the run ends
first. Profiles ask for it with ``prefetch_libs = true`` (the vLLM ones).
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

from patchctl import proc
from patchctl.errors import PatchctlError
from patchctl.train import pageread

#: the file in the run directory that says what was read, and how fast
LOG_NAME = "pagecache.log"


class Warming:
    """The read-ahead process, started at once; :meth:`stop` ends it if the run ended first.

    It is an ordinary child (no session of its own): it starts nothing, and dies with patchctl.
    """

    def __init__(self, python: str, env: Mapping[str, str], log: Path) -> None:
        self.log = log
        self._child: subprocess.Popen[bytes] | None = None
        try:
            with open(log, "wb") as sink:
                self._child = proc.spawn(
                    [python, str(Path(pageread.__file__).resolve())],
                    env=dict(env),
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    why="it reads the trainer's libraries into the page cache",
                )
        except (PatchctlError, OSError) as exc:
            # the trainer's own start names a missing interpreter; this is only a speed-up
            log.write_text(f"not started: {exc}\n", encoding="utf-8")

    def stop(self) -> None:
        if self._child is not None and self._child.poll() is None:
            self._child.kill()
            self._child.wait(timeout=10)
