"""Entry point of the host side: ``python -m patchctl.validate.host ACTION`` (see the package doc)."""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any

#: action -> module under patchctl.validate.host holding ``run(request, emit)``; imported on use,
#: so a preflight never pays for Ray's import and a Ray node never for the trainer's
ACTIONS = {
    "preflight": "preflight",
    "node": "node",
    "form": "form",
    "census": "census",
    "train": "train",
    "reap": "procs",
    "allreduce": "allreduce",
    "storage": "storage",
    "records": "records",
    "hostdump": "hostdump",
}


def emit(event: dict[str, Any]) -> None:
    """One JSON line to patchctl; a vanished reader (patchctl gone) is not this side's error."""
    try:
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, OSError, ValueError):
        pass


def _tomllib_fallback() -> None:
    """Python 3.10 without tomli: pip's vendored copy serves the few TOML files patchctl reads."""
    if sys.version_info >= (3, 11):  # tomllib is in the standard library
        return
    try:
        import tomli  # noqa: F401 - whether it imports is the question
    except ImportError:
        try:
            from pip._vendor import tomli as vendored

            sys.modules["tomli"] = vendored
        except ImportError:
            pass


def _first_line(fd: int) -> bytes:
    """The request: stdin's first line, read a byte at a time from the descriptor itself.

    The actions that stay open (node, form, train) watch the same descriptor with select for
    "stop" and end-of-file. ``sys.stdin.readline()`` read ahead into Python's buffer, where a
    "stop" patchctl sent right behind the request (a run torn down while this host was still
    starting) lay unseen: Ray started anyway, and the teardown waited its full minute."""
    line = bytearray()
    while True:
        byte = os.read(fd, 1)
        if not byte or byte == b"\n":
            return bytes(line)
        line += byte


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1] not in ACTIONS:
        emit({"event": "error", "error": f"unknown action {argv[1:]!r}; one of {sorted(ACTIONS)}"})
        return 2
    _tomllib_fallback()
    line = _first_line(sys.stdin.fileno())
    try:
        request = json.loads(line) if line.strip() else {}
    except ValueError as exc:
        emit({"event": "error", "error": f"bad request: {exc}"})
        return 2
    module = importlib.import_module(f"patchctl.validate.host.{ACTIONS[argv[1]]}")
    try:
        return int(module.run(request, emit) or 0)
    except Exception as exc:  # the host's failure, reported as an event rather than a traceback
        emit({"event": "error", "error": f"{type(exc).__name__}: {exc}"})
        return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv))
