"""How a migrate's hosts' runs go: the CLI's flags, known before anything loads."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from patchctl.clusters import Cluster
from patchctl.migrate.errors import UnknownHost


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

    @property
    def sealable(self) -> bool:
        """Whether a host may be judged by its seal (see migrate/seal.py): not when it must be read
        in full (--checksum), may lose files (--delete: its guard looks at the host first) or is
        only planned (--dry-run)."""
        return not (self.checksum or self.delete or self.dry_run)


def limit_hosts(cluster: Cluster, names: Sequence[str]) -> Cluster:
    """``cluster`` with only the hosts ``--host`` names (all of them when none is named), in the
    cluster's order: re-running the hosts that failed, as ``ansible --limit`` does."""
    if not names:
        return cluster
    known = [h.ssh for h in cluster.hosts]
    for name in names:
        if name not in known:
            raise UnknownHost(cluster.name, name, known)
    return dataclasses.replace(cluster, hosts=tuple(h for h in cluster.hosts if h.ssh in names))
