"""``migrate``: the tree to every host of a cluster, in parallel, each verified on arrival.

Everything shared is computed once before any host is touched (plan, then write; see
``prepare``): the file set and its sha256 manifest, the tag inventory, the provenance, and
here every host's generated files. Then each host runs on its own worker thread, over its own
ssh master connection, as one ``HostRun`` (check → send → verify → repair); a host that fails
becomes a result, never an exception, so it cannot stop the others.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

from patchctl.clusters import Cluster, Host
from patchctl.migrate import render, ssh
from patchctl.migrate.errors import DuplicateHost
from patchctl.migrate.hostrun import HostRun
from patchctl.migrate.prepare import Prepared, prepare
from patchctl.migrate.results import HostResult, HostStatus, MigrateResult, Phase, Progress, ProgressFn
from patchctl.migrate.session import Options, Session, start
from patchctl.migrate.verify_remote import Agent
from patchctl.patchsets.model import Patchset

__all__ = ["Options", "ProgressFn", "migrate", "run"]


def migrate(cluster: Cluster, root: Path, patchsets: Sequence[Patchset], options: Options = Options(),
            progress: ProgressFn | None = None) -> MigrateResult:
    """Log in to the hosts and migrate ``root`` to them. A caller with more to load first (the
    CLI) calls ``session.start`` itself, so that the logins overlap its loading."""
    return start(cluster, options).run(root, patchsets, progress)


def _labels(cluster: Cluster) -> list[str]:
    """How results name the hosts: the ssh destination, with the root where one repeats.
    (``validate`` names its nodes the same way.)"""
    seen: dict[tuple[str, str], int] = {}
    for i, h in enumerate(cluster.hosts):
        if (h.ssh, h.root) in seen:
            raise DuplicateHost(cluster, i)
        seen[(h.ssh, h.root)] = i
    ssh_names = [h.ssh for h in cluster.hosts]
    return [h.ssh if ssh_names.count(h.ssh) == 1 else f"{h.ssh}:{h.root}" for h in cluster.hosts]


def run(session: Session, root: Path, patchsets: Sequence[Patchset], progress: ProgressFn | None) -> MigrateResult:
    """Every host of the session on its own worker thread (as far as --jobs allows), each a
    ``HostRun`` once the tree is prepared here, which happens while they log in."""
    cluster, options = session.cluster, session.options
    example = render.find_example(root, patchsets)
    generated = (render.GIT_IGNORE,) if example else ()
    labels = _labels(cluster)
    rendered = [render.rendered_files(cluster, h, example) for h in cluster.hosts]
    jobs = max(1, options.jobs or len(cluster.hosts))
    lock = threading.Lock()

    def emit(event: Progress) -> None:
        if progress is not None:
            with lock:
                progress(event)

    conns = session.connections
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        # the hosts log in (and start their agents) while the tree is listed and hashed here
        ready: Future[Prepared] = Future()
        futures = [pool.submit(_connected, ready, h, label, files, emit, master)
                   for h, label, files, master in zip(cluster.hosts, labels, rendered, conns.masters)]
        try:
            tree = prepare(cluster, root, patchsets, generated, options, conns.dir)
        except BaseException as exc:
            ready.set_exception(exc)  # hosts waiting for the tree stop before they change anything
            for f in futures:
                f.cancel()  # hosts not started yet (--jobs) never log in
            raise
        ready.set_result(tree)
        results = tuple(f.result() for f in futures)
    return MigrateResult(cluster.name, str(root), tree.fs.commit, len(tree.fs.entries), results, options.dry_run)


def _connected(ready: Future[Prepared], host: Host, label: str, rendered: dict[str, str], emit: ProgressFn,
               master: ssh.Master) -> HostResult:
    """One host's run over its own master connection, closed after; its first agent is started
    as soon as the host is logged in, before the tree is ready (see verify_remote.Agent)."""
    emit(Progress(label, Phase.CONNECTING))
    try:
        failed = master.open()
        if failed:
            result = HostResult(label, host.root, HostStatus.UNREACHABLE, 0, 0, time.monotonic() - master.started,
                                False, failed)
            emit(Progress(label, Phase.DONE, status=result.status))
            return result
        with ExitStack() as agents:
            first = agents.enter_context(Agent(master.cluster, host, master.socket))
            return HostRun(ready.result(), host, label, rendered, master, emit, agents).run(first)
    finally:
        master.close()
