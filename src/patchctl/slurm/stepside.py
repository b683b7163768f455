"""``python -m patchctl.slurm.stepside ACTION``: validate's host side (``patchctl.validate.host``)
as a Slurm job step runs it, with SIGTERM turned into the interrupt that side already handles.

Slurm ends a job (scancel, the time limit, a lost node) by sending SIGTERM to every process of
its steps and SIGKILL ``KillWait`` seconds later. Python's default SIGTERM ends the host side at
once, skipping the ``finally`` in which it stops what it started; and where Slurm tracks a
step's processes by their parents (proctrack/linuxproc), a Ray daemon whose parent died first is
no longer the step's and outlives the job. Raised as KeyboardInterrupt instead, the node ends
every process carrying the run's marker (host/node.py) and the trainer's side ends the trainer's
process group (host/train.py), within that grace.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType


def _interrupt(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the cleanup itself must not be cut short
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _interrupt)
    from patchctl.validate.host.__main__ import main as host_main

    try:
        return host_main(argv)
    except KeyboardInterrupt:
        return 143


if __name__ == "__main__":
    sys.exit(main(sys.argv))
