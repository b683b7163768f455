"""The start of a migrate: the hosts begin logging in before anything else is loaded.

A login (key exchange, the login shell) takes a good part of a small migrate's time, and
nothing it needs depends on the tree; so a caller that has more to load first (the CLI: the
patchsets, the target, the rest of migrate) calls :func:`start`, loads, then calls
:meth:`Session.run`, and the logins overlap all of that. This module imports only ``ssh`` for
that reason; the rest of migrate loads inside ``run``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from patchctl.migrate import early
from patchctl.migrate.options import Options
from patchctl.remote import ssh

if TYPE_CHECKING:
    from patchctl.clusters import Cluster
    from patchctl.migrate.listing import Listing
    from patchctl.migrate.results import MigrateResult, ProgressFn
    from patchctl.patchsets.model import Patchset


class Session:
    """One migrate of one cluster, begun: the first ``options.jobs`` hosts are logging in (the
    others log in when a worker takes them up). Run once; closing it (or the end of ``run``)
    ends every login."""

    def __init__(self, cluster: Cluster, options: Options = Options()) -> None:
        self.cluster, self.options = cluster, options
        #: the hosts' master connections, in the cluster's order: those the ``patchctl`` script
        #: began for this very cluster before the CLI loaded (see early), else begun now
        self.connections = early.take(cluster, options.jobs) or ssh.Connections(cluster, options.jobs)
        #: git's answers about the tree, once the caller has named it (see :meth:`look_at`)
        self.listing: Listing | None = None

    def look_at(self, root: Path) -> None:
        """Ask git about ``root`` now, as the logins were begun: its answers come while the caller
        loads the rest, and ``run`` of the same root uses them (see :mod:`patchctl.migrate.listing`)."""
        from patchctl.migrate.listing import Listing

        self.listing = Listing(root)

    def run(self, root: Path, patchsets: Sequence[Patchset], progress: ProgressFn | None = None) -> MigrateResult:
        """Send ``root`` to every host, verify and repair it there; see :mod:`patchctl.migrate.runner`."""
        from patchctl.migrate import runner  # here, not at the top: it loads while the hosts log in

        try:
            return runner.run(self.cluster, self.options, self.connections, root, patchsets, progress, self.listing)
        finally:
            self.close()

    def close(self) -> None:
        self.connections.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start(cluster: Cluster, options: Options = Options()) -> Session:
    """Begin a migrate of ``cluster``: its hosts log in now, while the caller loads the rest."""
    return Session(cluster, options)


def migrate(
    cluster: Cluster,
    root: Path,
    patchsets: Sequence[Patchset],
    options: Options = Options(),
    progress: ProgressFn | None = None,
) -> MigrateResult:
    """Log in to the hosts and migrate ``root`` to them. A caller with more to load first (the
    CLI) calls :func:`start` itself, so that the logins overlap its loading."""
    return start(cluster, options).run(root, patchsets, progress)
