"""The host side's lease (host/node.py ``_serve``): silence past the lease ends it, a heartbeat
renews it, and the hard ceiling ends it however lively patchctl is. No Ray: the supervisor loop
alone, reading a real pipe as it reads ssh's stdin."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from patchctl.validate.host import node


@pytest.fixture
def stdin(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    read, write = os.pipe()
    with os.fdopen(read, "rb", buffering=0) as r:
        monkeypatch.setattr(sys, "stdin", r)
        yield write
    with contextlib.suppress(OSError):
        os.close(write)


def test_silence_past_the_lease_ends_the_node(stdin: int) -> None:
    t0 = time.monotonic()
    assert node._serve(None, lambda e: None, lease=(0.5, None)) == "lease expired: no word from patchctl for 0.5 s"
    assert 0.5 <= time.monotonic() - t0 < 3


def test_heartbeats_renew_the_lease_until_the_ceiling(stdin: int) -> None:
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(0.1):
            os.write(stdin, b'{"cmd": "beat"}\n')

    threading.Thread(target=beat, daemon=True).start()
    t0 = time.monotonic()
    try:
        reason = node._serve(None, lambda e: None, lease=(0.5, 2.0))
    finally:
        stop.set()
    assert reason == "the run's hard ceiling of 2 s was reached" and time.monotonic() - t0 >= 2.0


def test_end_of_input_still_ends_it_at_once(stdin: int) -> None:
    os.close(stdin)
    assert node._serve(None, lambda e: None, lease=(30.0, 60.0)) == "end of input"
