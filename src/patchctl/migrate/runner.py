"""``migrate``: the tree to every host of a cluster, in parallel, each verified on arrival.

Everything shared is computed once before any host is touched (plan, then write): the file
set and its sha256 manifest, every host's generated files, the tag inventory, the provenance.
Then each host runs on its own worker thread, over its own ssh master connection: rsync and
one or two checks by the host's agent (see ``_host`` for the order); a host that fails becomes
a result, never an exception, so it cannot stop the others.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchctl.clusters import Cluster, Host
from patchctl.errors import ManifestError
from patchctl.migrate import fileset, provenance, render, ssh, state, transfer, verify_remote
from patchctl.migrate.results import HostResult, HostStatus, MigrateResult, Phase, Progress
from patchctl.patchsets.model import Patchset

ProgressFn = Callable[[Progress], None]


@dataclass(frozen=True)
class Options:
    dry_run: bool = False
    #: remove files deleted at the source (within the root, at most the cluster's max_delete)
    delete: bool = False
    #: compare by content instead of size and time (resends files altered on a host)
    checksum: bool = False
    #: hosts at a time; None: all of them
    jobs: int | None = None


@dataclass(frozen=True)
class _Shared:
    cluster: Cluster
    fs: fileset.FileSet
    files_from: Path
    manifest: list[list[object]]
    tags: dict[str, Any]
    provenance: dict[str, Any]
    options: Options
    #: seconds to wait for one agent call (grows with the tree: the host hashes all of it)
    timeout: float


def _labels(cluster: Cluster) -> list[str]:
    seen: dict[tuple[str, str], int] = {}
    for i, h in enumerate(cluster.hosts):
        if (h.ssh, h.root) in seen:
            raise ManifestError(cluster.source, f"clusters.{cluster.name}.hosts[{i}]",
                                f"{h.ssh}:{h.root} is listed twice", "remove the duplicate")
        seen[(h.ssh, h.root)] = i
    ssh_names = [h.ssh for h in cluster.hosts]
    return [h.ssh if ssh_names.count(h.ssh) == 1 else f"{h.ssh}:{h.root}" for h in cluster.hosts]


def migrate(cluster: Cluster, root: Path, patchsets: Sequence[Patchset], options: Options = Options(),
            progress: ProgressFn | None = None, connections: ssh.Connections | None = None) -> MigrateResult:
    """``connections``: the cluster's logins, started by the caller as early as it could (they
    are closed here); without it migrate starts them itself."""
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

    with connections or ssh.Connections(cluster, jobs) as conns, ThreadPoolExecutor(max_workers=jobs) as pool:
        # the hosts log in (and start their agents) while the tree is listed and hashed here
        ready: Future[_Shared] = Future()
        futures = [pool.submit(_connected, ready, h, label, files, emit, master)
                   for h, label, files, master in zip(cluster.hosts, labels, rendered, conns.masters)]
        try:
            shared = _prepare(cluster, root, patchsets, generated, options, conns.dir)
        except BaseException as exc:
            ready.set_exception(exc)  # hosts waiting for the tree stop before they change anything
            for f in futures:
                f.cancel()  # hosts not started yet (--jobs) never log in
            raise
        ready.set_result(shared)
        results = tuple(f.result() for f in futures)
    return MigrateResult(cluster.name, str(root), shared.fs.commit, len(shared.fs.entries), results,
                         options.dry_run)


def _prepare(cluster: Cluster, root: Path, patchsets: Sequence[Patchset], generated: tuple[str, ...],
             options: Options, tmp: Path) -> _Shared:
    """Everything the hosts share: the file set, its list for rsync, the manifest, tags, provenance."""
    fs = fileset.collect(root, cluster, generated)
    tags = verify_remote.tags_request(fs, {p.tag for ps in patchsets for p in ps.patches}, generated)
    files_from = tmp / "files"
    _write_list(files_from, fs.paths)
    return _Shared(cluster, fs, files_from, [e.as_manifest() for e in fs.entries], tags,
                   provenance.build(fs, cluster), options, cluster.timeout + fs.size / 20e6)


def _write_list(path: Path, paths: Sequence[str]) -> None:
    """A file list for rsync's ``--files-from --from0``."""
    path.write_bytes(b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths))


def _guard(shared: _Shared, count: int) -> str:
    c = shared.cluster
    return (f"--delete would remove {count} files, more than max_delete = {c.max_delete}; nothing was sent or "
            f"deleted — check the source tree, or raise clusters.{c.name}.max_delete in {c.source}")


def _connected(ready: Future[_Shared], host: Host, label: str, rendered: dict[str, str], emit: ProgressFn,
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
            def start_agent() -> verify_remote.Agent:
                return agents.enter_context(verify_remote.Agent(master.cluster, host, master.socket))

            first = start_agent()
            return _host(ready.result(), host, label, rendered, emit, master, first, start_agent)
    finally:
        master.close()


def _host(shared: _Shared, host: Host, label: str, rendered: dict[str, str], emit: ProgressFn, master: ssh.Master,
          agent: verify_remote.Agent, start_agent: Callable[[], verify_remote.Agent]) -> HostResult:
    """One host, in the cheaper of two orders; both end verified on the host, and files the
    verification still finds differing are re-sent by content and verified again (repaired).

    - check first, then rsync and check again only if the check found files to send: when the
      host verified this very tree last time (a re-run), and always with --delete (its guard
      must stop the host before any byte is sent);
    - rsync first, then check: when the tree changed since (a first run, an edit), so no round
      trip is spent before a transfer that is needed anyway.

    ``agent`` is already started; each later check's agent is started when the step before it
    begins (``start_agent``), so its start-up overlaps that step.
    """
    opts, cluster, control, start = shared.options, shared.cluster, master.socket, master.started
    sent = {"files": 0, "bytes": 0}
    expected = state.digest(shared.provenance["manifest_sha256"], rendered)

    def done(status: HostStatus, reason: str = "", **kw: Any) -> HostResult:
        result = HostResult(label, host.root, status, sent["files"], sent["bytes"], time.monotonic() - start,
                            reason=reason, verified=kw.pop("verified", False), **kw)
        emit(Progress(label, Phase.DONE, result.files_sent, result.bytes_sent, status))
        if result.verified:
            state.remember(cluster, host, expected)
        return result

    request = {"manifest": shared.manifest, "rendered": rendered, "delete": opts.delete,
               "max_delete": cluster.max_delete, "tags": shared.tags, "provenance": shared.provenance}

    def check(by: verify_remote.Agent, phase: Phase, **kw: Any) -> verify_remote.AgentReply:
        emit(Progress(label, phase, sent["files"], sent["bytes"]))
        return by.ask(dict(request, action="finish", **kw), shared.timeout)

    def send(files_from: Path = shared.files_from, checksum: bool = opts.checksum,
             phase: Phase = Phase.TRANSFERRING) -> transfer.TransferResult:
        def on_item(item: transfer.Item) -> None:
            if item.is_file_sent:
                sent["files"] += 1
                sent["bytes"] += item.sent
                emit(Progress(label, phase, sent["files"], sent["bytes"]))

        emit(Progress(label, phase, sent["files"], sent["bytes"]))
        return transfer.send(cluster, host, shared.fs.root, files_from, checksum=checksum,
                             control=control, on_item=on_item)

    def failed(tr: transfer.TransferResult, **kw: Any) -> HostResult:
        if tr.returncode in (12, 255) and master.lost():
            why = "ssh could not reach the host any more (it went down, or the network dropped)"
            return done(HostStatus.UNREACHABLE, f"rsync exit {tr.returncode}: {why}; re-run migrate to resume", **kw)
        status = HostStatus.UNREACHABLE if tr.returncode == 255 else HostStatus.FAILED
        return done(status, transfer.cause(tr.returncode, tr.stderr, connected=True) + "; re-run migrate to resume",
                    **kw)

    if opts.dry_run:
        emit(Progress(label, Phase.CHECKING))
        plan = agent.ask(dict(request, action="plan"), shared.timeout)
        return done(plan.failure, plan.reason) if plan.failure else _plan(shared, host, plan.data, done, sent)
    common: dict[str, Any] = {}
    if opts.delete or state.last_verified(cluster, host) == expected:
        reply = check(agent, Phase.CHECKING)
        if reply.failure:
            return done(reply.failure, reply.reason)
        if reply.data["delete_refused"]:
            return done(HostStatus.FAILED, _guard(shared, len(reply.data["deletions"])))
        common = dict(deleted=tuple(reply.data["deletions"]), rendered=tuple(reply.data["rendered"]))
        if not reply.data["problems"]:
            return _verdict(reply, done, common)
        agent = start_agent()  # for the check after the transfer
    tr = send()
    if tr.returncode not in (0, 255) and not common:
        # rsync creates only the last component of a missing root; the check creates all of it
        reply = check(agent, Phase.CHECKING)
        if reply.failure:
            return done(reply.failure, reply.reason)
        if not reply.data["root_exists"]:
            agent = start_agent()
            tr = send()
    if tr.returncode != 0:
        return failed(tr, **common)
    reply = check(agent, Phase.VERIFYING, delete=False)
    if reply.failure:
        return done(reply.failure, "sent, but not verified: " + reply.reason, **common)
    common = common or dict(rendered=tuple(reply.data["rendered"]))
    differing = _differing(shared, reply)
    if not differing:
        return _verdict(reply, done, common)
    # Files altered on the host with their size and time kept pass rsync's quick check, so a
    # plain re-run would never resend them (#10): resend exactly those, by content, and check again.
    agent = start_agent()
    tr = send(_repair_list(shared, differing), checksum=True, phase=Phase.REPAIRING)
    if tr.returncode != 0:
        return failed(tr, mismatches=verify_remote.mismatches(reply), **common)
    again = check(agent, Phase.VERIFYING, delete=False)
    if again.failure:
        return done(again.failure, "re-sent differing files, but not verified: " + again.reason,
                    mismatches=verify_remote.mismatches(reply), **common)
    return _verdict(again, done, common, _repair_items(reply, differing))


def _repair_list(shared: _Shared, paths: list[str]) -> Path:
    """This host's own file list for the re-send, beside the shared one (removed with it)."""
    fd, name = tempfile.mkstemp(dir=shared.files_from.parent, prefix="repair-")
    os.close(fd)
    _write_list(Path(name), paths)
    return Path(name)


def _differing(shared: _Shared, reply: verify_remote.AgentReply) -> list[str]:
    """Files of the tree the host's check found different: what a re-send by content can fix
    (a generated file or a tagged line in a file the source lacks cannot be fixed that way)."""
    paths = {e.path for e in shared.fs.entries}
    return [path for path, _why in reply.data["problems"] if path in paths]


def _repair_items(reply: verify_remote.AgentReply, differing: list[str]) -> tuple[str, ...]:
    """``path: what differed`` for each re-sent file, as the first check saw it."""
    why = dict((path, w) for path, w in reply.data["problems"])
    return tuple(f"{path}: {why[path]}" for path in differing)


def _verdict(reply: verify_remote.AgentReply, done: Callable[..., HostResult], common: dict[str, Any],
             repaired: tuple[str, ...] = ()) -> HostResult:
    mismatches = verify_remote.mismatches(reply)
    if not mismatches and not repaired:
        return done(HostStatus.OK, verified=True, **common)
    if not mismatches:
        return done(HostStatus.REPAIRED, f"{len(repaired)} file(s) differed on the host after the transfer; "
                    "re-sent by content and verified", verified=True, repaired=repaired, **common)
    return done(HostStatus.MISMATCH, _mismatch_reason(reply.data, len(mismatches), bool(repaired)),
                mismatches=mismatches, **common)


def _mismatch_reason(data: dict[str, Any], count: int, resent: bool) -> str:
    hints = []
    if data.get("problems"):
        hints.append("they still differ after being re-sent by content: something on the host changes them, or "
                     "cannot be replaced there (a directory in the way?)" if resent else "see the list")
    if data.get("tags_only_here"):
        hints.append("--delete removes files deleted at the source; other tagged files there are hand edits")
    return f"{count} difference(s) on the host after the transfer; " + "; ".join(hints or ["see the list"])


def _plan(shared: _Shared, host: Host, data: dict[str, Any], done: Callable[..., HostResult],
          sent: dict[str, int]) -> HostResult:
    """--dry-run: the files that differ there (what a run sends), what --delete would remove,
    which generated files would change; the host's agent only read."""
    sizes = {e.path: e.size for e in shared.fs.entries}
    would = [path for path, _why in data["problems"] if path in sizes]
    sent["files"], sent["bytes"] = len(would), sum(sizes[p] for p in would)
    changes = ([f"send {p}" for p in would] + [f"delete {p}" for p in data["deletions"]]
               + [f"render {p}" for p in data["rendered"]])
    if data["delete_refused"]:
        return done(HostStatus.FAILED, _guard(shared, len(data["deletions"])), changes=tuple(changes))
    return done(HostStatus.PLANNED, "" if data["root_exists"] else f"{host.root} does not exist yet",
                changes=tuple(changes))
