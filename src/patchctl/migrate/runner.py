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
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any

from patchctl.clusters import Cluster, Host
from patchctl.migrate import render, verify_remote
from patchctl.migrate.hostrun import HostRun
from patchctl.migrate.hoststeps import Tally
from patchctl.migrate.listing import Listing
from patchctl.migrate.options import Options
from patchctl.migrate.prepare import Pending, prepare
from patchctl.migrate.results import HostResult, HostStatus, MigrateResult, Phase, Progress, ProgressFn
from patchctl.migrate.verify_remote import Agent
from patchctl.patchsets.model import Patchset
from patchctl.remote import ssh
from patchctl.remote.hosts import labels as host_labels
from patchctl.remote.lock import RootLock


def run(
    cluster: Cluster,
    options: Options,
    conns: ssh.Connections,
    root: Path,
    patchsets: Sequence[Patchset],
    progress: ProgressFn | None,
    asked: Listing | None = None,
    started: Sequence[Future[Agent | None]] = (),
) -> MigrateResult:
    """Every host of the cluster on its own worker thread (as far as --jobs allows), over the
    session's ``conns``, each a ``HostRun`` once the tree is prepared here, which happens while
    they log in. ``asked``: git's answers about ``root``, asked earlier (see listing);
    ``started``: the first hosts' agents, started as each logged in (see session.look_at)."""
    example = render.find_example(root, patchsets)
    generated = (render.GIT_IGNORE,) if example else ()
    labels = host_labels(cluster)
    rendered = [render.rendered_files(cluster, h, example) for h in cluster.hosts]
    # what each host's first agent needs to start reading its tree early (None: a dry run reads only)
    rule = verify_remote.tag_rule({p.tag for ps in patchsets for p in ps.patches})
    prescan = None if options.dry_run else {"rule": rule, "rehash": options.checksum}
    if prescan is not None and options.sealable:
        prescan["seal"] = True  # the agent answers at once whether its tree is as it last verified it
    jobs = max(1, options.jobs or len(cluster.hosts))
    lock = threading.Lock()

    def emit(event: Progress) -> None:
        if progress is not None:
            with lock:
                progress(event)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        # the hosts log in (and start their agents) while the tree is listed and hashed here
        pending = Pending(cluster, root, options)
        early = [*started, *[None] * (len(cluster.hosts) - len(started))]
        futures = [
            pool.submit(_connected, pending, h, label, files, emit, master, prescan, agent)
            for h, label, files, master, agent in zip(
                cluster.hosts, labels, rendered, conns.masters, early, strict=True
            )
        ]
        try:
            prepare(root, patchsets, generated, conns.dir, pending, asked, partial(_needed, pending, futures))
        except BaseException as exc:
            pending.fail(exc)  # hosts waiting for the tree stop before they check or verify anything
            for f in futures:
                f.cancel()  # hosts not started yet (--jobs) never log in
            raise
        results = tuple(f.result() for f in futures)
    summary = pending.summary.result()
    return MigrateResult(cluster.name, str(root), summary.commit, summary.files, results, options.dry_run)


def _needed(pending: Pending, hosts: list[Future[HostResult]]) -> bool:
    """Whether a host needs the prepared tree: waits until one says so (``pending.want``), or
    until every host has ended without (each was judged by its own seal, see HostRun.sealed)."""
    while not pending.wanted.done():
        running = [f for f in hosts if not f.done()]
        if not running:
            return False
        waited: list[Future[Any]] = [*running, pending.wanted]
        wait(waited, return_when=FIRST_COMPLETED)
    return True


def _connected(
    pending: Pending,
    host: Host,
    label: str,
    rendered: dict[str, str],
    emit: ProgressFn,
    master: ssh.Master,
    prescan: dict[str, Any] | None,
    started: Future[Agent | None] | None = None,
) -> HostResult:
    """One host's run over its own master connection, closed after. As soon as the host is logged
    in, before the tree is ready, the host's root is requested (remote.lock: one migrate per root
    at a time; not for a dry run, which writes nothing: ``prescan`` None) and its first agent
    started, reading the host's tree already (see verify_remote.Agent)."""
    emit(Progress(label, Phase.CONNECTING))
    try:
        failed = master.open()
        if failed:
            result = HostResult(
                label, host.root, HostStatus.UNREACHABLE, 0, 0, time.monotonic() - master.started, False, failed
            )
            emit(Progress(label, Phase.DONE, status=result.status))
            return result
        with ExitStack() as hold, ExitStack() as agents:  # closed in reverse: the agents end, then the root is let go
            roots: list[RootLock] = []

            def ask_root() -> RootLock:
                """The host's root, asked for once (its keeper's session started at the first call)."""
                if not roots:
                    roots.append(hold.enter_context(RootLock(master.cluster, host, master.socket)))
                return roots[0]

            hostrun = HostRun(pending, host, label, rendered, master, emit, agents, ask_root)
            # a host that may be settled by its seal is only read: its root is asked for only if
            # the seal does not settle it (HostRun.run), which spares the lock's ssh session; a
            # source known to have changed already (Pending.changed) settles no host by its seal
            sealable = hostrun.may_seal and not pending.changed()
            held = None if prescan is None or sealable else ask_root()
            if prescan is not None and not sealable:
                prescan = {k: v for k, v in prescan.items() if k != "seal"}  # no seal answer to work out
            early = started.result() if started is not None else None
            if early is None:
                first = agents.enter_context(Agent(master.cluster, host, master.socket, prescan))
            else:  # started as the host logged in: it waited for its prescan until now
                first = agents.enter_context(early)
                if prescan is not None:
                    first.send_prescan(prescan)
            pending.listed.result()  # a tree that cannot be sent stops the host before its root is taken
            refused = held.wait() if held is not None else None
            if refused:
                return hostrun.end(Tally(), HostStatus.FAILED, refused)
            return hostrun.run(first)
    finally:
        master.close()
