"""The ``patchctl`` script: a migrate's logins begin before the command line interface loads.

Importing click, the command group and the migrate command takes some 50 ms, and a migrate's
hosts cannot log in before its command line is parsed. So the script reads a ``migrate``
command line first (:mod:`patchctl.migrate.early`) and only then loads the CLI, which takes the
logins over. Every other command goes straight to :func:`patchctl.cli.main.main`.
"""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:2] == ["migrate"]:
        from patchctl.migrate import early

        early.begin(sys.argv[2:])
    from patchctl.cli.main import main as cli_main

    cli_main()
