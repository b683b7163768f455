"""The ``patchctl`` script: a migrate's logins begin before the command line interface loads.

Importing click, the command group and the migrate command takes some 50 ms, and a migrate's
hosts cannot log in before its command line is parsed. So the script reads a ``migrate``
command line first (:mod:`patchctl.migrate.early`) and only then loads the CLI, which takes the
logins over. A plain ``verify`` or ``migrate`` command line runs without click at all
(:mod:`patchctl.cli.quick`: click's import was a quarter of a ``verify --json``). Every other command goes straight to
:func:`patchctl.cli.main.main`.

A migrate also ends without the interpreter's teardown of its ~400 modules (15-40 ms on two busy
cores, measured beside the same imports ended by ``os._exit``), which a no-change re-run of a
small tree, measured against rsync's, paid at every run; so do verify, apply, revert and list
(:data:`QUICK_EXIT`), measured against grep and git apply (some 15 ms of their ~200 modules).
What an ordinary exit does that matters is done first: the threads still running are waited
for, the ``atexit`` handlers run (unused logins closed, temporary folders removed) and the
output is flushed.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import sys

#: the collector's youngest generation for those commands (CPython's default: 700 allocations)
GC_YOUNG = 50_000

#: the commands that end by :func:`_exit`: those measured against rsync, grep and git apply,
#: whose every write goes through a file closed (and synced) before the command returns
QUICK_EXIT = frozenset({"migrate", "verify", "apply", "revert", "list"})


def main() -> None:
    command = sys.argv[1:2]
    if not command or command[0] not in QUICK_EXIT:
        from patchctl.cli.main import main as cli_main

        cli_main()
        return
    # their start-up allocates the objects of ~170 modules, which all live on: the collector ran
    # every 700 allocations over them, 3% of a verify's instructions (issue 39.13); cycles are
    # still collected, less often, and the older generations keep their thresholds
    gc.set_threshold(GC_YOUNG, *gc.get_threshold()[1:])
    if command == ["migrate"]:
        from patchctl.migrate import early

        early.begin(sys.argv[2:])
    try:
        if command == ["verify"]:
            from patchctl.cli import quick

            quick.verify(sys.argv[2:])  # returns only where click must read the command line
        elif command == ["migrate"]:
            from patchctl.cli import quick

            quick.migrate(sys.argv[2:])  # likewise
        from patchctl.cli.main import main as cli_main

        cli_main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    _exit(code)


def _exit(code: object) -> None:
    """``sys.exit(code)`` without the interpreter's teardown (see the module's docstring)."""
    if code is not None and not isinstance(code, int):  # sys.exit("message"): printed, exit 1
        print(code, file=sys.stderr)
        code = 1
    # the interpreter's own first two steps of an exit, in its order: wait for the threads still
    # running (and shut idle thread pools down), then the atexit handlers
    # threading only where something imported it: a process that never did started no thread of its
    # own to wait for, and importing it here cost every command its start-up (issue 39.13)
    threading = sys.modules.get("threading")
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader that went away, a stream closed already
            stream.flush()
    os._exit(code or 0)
