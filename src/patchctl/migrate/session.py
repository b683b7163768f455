"""The start of a migrate: the hosts begin logging in before anything else is loaded.

A login (key exchange, the login shell) takes a good part of a small migrate's time, and
nothing it needs depends on the tree; so a caller that has more to load first (the CLI: the
patchsets, the target, the rest of migrate) calls :func:`start`, loads, then calls
:meth:`Session.run`, and the logins overlap all of that. This module imports only ``ssh`` for
that reason; the rest of migrate loads inside ``run``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

from patchctl.migrate import early
from patchctl.migrate.options import Options
from patchctl.remote import ssh

if TYPE_CHECKING:
    from patchctl.clusters import Cluster
    from patchctl.migrate.listing import Listing
    from patchctl.migrate.results import MigrateResult, ProgressFn
    from patchctl.migrate.verify_remote import Agent
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
        #: per host, the agent started as soon as the host is logged in (see :meth:`look_at`);
        #: empty before, and for the hosts beyond ``--jobs``
        self.agents: list[Future[Agent | None]] = []
        self._agents_lock, self._closing = threading.Lock(), threading.Event()

    def look_at(self, root: Path) -> None:
        """Ask git about ``root`` now, as the logins were begun: its answers come while the caller
        loads the rest, and ``run`` of the same root uses them (see :mod:`patchctl.migrate.listing`).

        Each host's first agent starts here too, as soon as its login is done. Its ssh session
        and python3's start on the host took 0.1-0.3 s after the source's check and the rest of
        migrate had loaded here, on every run (issue 39): now they overlap. The agent waits for
        its prescan (``runner``), so it reads nothing before the host's root is asked for."""
        from patchctl.migrate.listing import Listing

        self.listing = Listing(root)
        for master in self.connections.masters[: self.options.jobs or len(self.connections.masters)]:
            started: Future[Agent | None] = Future()
            threading.Thread(target=self._start_agent, args=(master, started), daemon=True).start()
            self.agents.append(started)

    def _start_agent(self, master: ssh.Master, started: Future[Agent | None]) -> None:
        """The host's agent once its login is done; None when the login failed (``run`` reports
        it) or the session was closed first."""
        try:
            agent = None
            if master.logged_in(self._closing):
                from patchctl.migrate.verify_remote import Agent

                with self._agents_lock:  # never after close(): its socket would be gone, and ssh log in anew
                    if not self._closing.is_set():
                        agent = Agent(self.cluster, master.host, master.socket)
                    started.set_result(agent)
                return
            started.set_result(None)
        except BaseException as exc:  # raised by run, in the host's own thread
            if not started.done():
                started.set_exception(exc)

    def run(self, root: Path, patchsets: Sequence[Patchset], progress: ProgressFn | None = None) -> MigrateResult:
        """Send ``root`` to every host, verify and repair it there; see :mod:`patchctl.migrate.runner`."""
        from patchctl.migrate import runner  # here, not at the top: it loads while the hosts log in

        try:
            return runner.run(
                self.cluster, self.options, self.connections, root, patchsets, progress, self.listing, self.agents
            )
        finally:
            self.close()

    def close(self) -> None:
        """End every login, and the agents ``run`` did not take (an agent ends with its login)."""
        with self._agents_lock:  # from here on no agent starts, and every one started is in self.agents
            self._closing.set()
        for started in self.agents:
            agent = started.result() if started.done() and started.exception() is None else None
            if agent is not None:
                agent.close()  # one already taken and closed by its host run: nothing left to do
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
