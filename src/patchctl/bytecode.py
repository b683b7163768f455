"""Bytecode of a verl tree goes to patchctl's cache, never into the tree.

Every Python that patchctl starts on a tree (``verify --env``'s probes, the trainer, a host's Ray
processes) imports verl from it, and CPython writes ``__pycache__`` folders next to each module it
imports. Those folders made the tree dirty for ``git status``, showed up as untracked files, and
were sent to every host by the next migrate (issue 39). ``PYTHONPYCACHEPREFIX`` (Python 3.8+) moves
them under one folder of the cache, keyed by each source's absolute path, so a second run still
finds them and starts as fast as before; ``PYTHONDONTWRITEBYTECODE`` would cost every run its
compile. A prefix or a no-bytecode setting of the user's own is left as it is.

Standard library only: the validate host agent imports it on machines where only the shipped
package is on the path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

PREFIX = "PYTHONPYCACHEPREFIX"


def cache_root(environ: Mapping[str, str]) -> str:
    """``$PATCHCTL_CACHE``, else ``$XDG_CACHE_HOME/patchctl``, else ``~/.cache/patchctl``."""
    if environ.get("PATCHCTL_CACHE"):
        return environ["PATCHCTL_CACHE"]
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "patchctl")


def outside_tree(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables that keep a child's bytecode out of the trees it imports: ``{}`` when the
    environment already says where bytecode goes (or that none is written)."""
    if environ.get(PREFIX) or environ.get("PYTHONDONTWRITEBYTECODE"):
        return {}
    return {PREFIX: os.path.join(cache_root(environ), "pycache")}
