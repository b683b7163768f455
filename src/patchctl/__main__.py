"""``python -m patchctl``: the same entry point as the ``patchctl`` script."""

from patchctl.cli.entry import main

main()
