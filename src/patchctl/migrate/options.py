"""How a migrate's hosts' runs go: the CLI's flags, known before anything loads."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Options:
    """How the hosts' runs go (the CLI's flags); known before anything loads, so ``start`` takes them."""

    #: list what would change on each host, change nothing
    dry_run: bool = False
    #: remove files deleted at the source (within the root, at most the cluster's max_delete)
    delete: bool = False
    #: compare by content instead of size and time (resends files altered on a host)
    checksum: bool = False
    #: hosts at a time; None: all of them
    jobs: int | None = None
