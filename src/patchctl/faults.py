"""The test-only fault switch, and holding signals while a roll-back must not be cut short.

Every file-system mutation of a journaled write calls :func:`step`, so the tests can kill the
process at each one in turn (see ``tests/faults``).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager

_steps = 0


def step() -> None:
    """Count one file-system mutation; the test-only fault switch acts on the Nth.

    ``PATCHCTL_TEST_FAULT=kill@N`` SIGKILLs this process right before its Nth mutation
    (``int@N`` / ``term@N`` send SIGINT / SIGTERM instead; ``stop@N`` SIGSTOPs it, so a test
    can act while a change is half-written and SIGCONT it after), in the spirit of git's
    ``GIT_TEST_*`` variables. Unset, it costs one environment lookup.
    """
    global _steps
    fault = os.environ.get("PATCHCTL_TEST_FAULT")
    if not fault:
        return
    _steps += 1
    how, _, at = fault.partition("@")
    if at.isdigit() and _steps == int(at):
        sig = {"kill": signal.SIGKILL, "int": signal.SIGINT, "term": signal.SIGTERM, "stop": signal.SIGSTOP}[how]
        os.kill(os.getpid(), sig)


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while a roll-back runs, so a second Ctrl-C cannot cut it in half."""
    sigs = {signal.SIGINT, signal.SIGTERM}
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    except (ValueError, OSError):  # not the main thread: nothing to hold
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
