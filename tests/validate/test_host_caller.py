"""patchctl's lines to a host action that stays open (node, train), read from a real pipe."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from patchctl.validate.host import node
from patchctl.validate.host.caller import Caller


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read, write = os.pipe()
    yield read, write
    for fd in (read, write):
        with contextlib.suppress(OSError):
            os.close(fd)


def test_a_stop_cut_between_two_reads_is_still_a_stop(pipe: tuple[int, int]) -> None:
    """ssh may deliver a line in pieces: the first half waits for the second."""
    read, write = pipe
    caller = Caller(read)
    os.write(write, b'{"cmd": "beat"}\n{"cmd": "st')
    assert caller.wait(1) == ["beat"]
    assert caller.gone() is False  # half a stop is not a stop yet
    os.write(write, b'op"}\n')
    assert caller.gone()


def test_heartbeats_waiting_are_not_a_stop(pipe: tuple[int, int]) -> None:
    read, write = pipe
    caller = Caller(read)
    os.write(write, b'{"cmd": "beat"}\n' * 3)
    assert caller.gone() is False
    assert caller.wait(0) == []  # they were read: nothing left waiting


def test_lines_that_are_not_commands_are_word_from_patchctl_and_nothing_else(pipe: tuple[int, int]) -> None:
    read, write = pipe
    caller = Caller(read)
    before = caller.heard
    time.sleep(0.01)
    os.write(write, b'[1]\n"stop"\nnot json\n\n{"cmd": 7}\n{"cmd": "tail"}\n')
    assert caller.wait(1) == ["tail"]
    assert caller.heard > before  # the lease is renewed all the same
    os.close(write)
    assert caller.wait(1) is None


def test_a_node_stopped_by_a_split_line_says_it_was_asked(
    pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The supervisor's loop itself: a line that is not an object leaves it running (it used to end
    with a traceback, leaving Ray to the lease), and a stop in two pieces stops it."""
    read, write = pipe
    with os.fdopen(read, "rb", buffering=0) as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)

        def say() -> None:
            for piece in (b"[1]\n", b'{"cmd": "st', b'op"}\n'):
                time.sleep(0.2)
                os.write(write, piece)

        threading.Thread(target=say, daemon=True).start()
        assert node._serve(None, lambda e: None, lease=(30.0, 10.0)) == "asked"
