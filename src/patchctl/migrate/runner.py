"""``migrate``: the tree to every host of a cluster, in parallel, each verified on arrival.

Everything shared is computed once before any host is touched (plan, then write): the file
set and its sha256 manifest, every host's generated files, the tag inventory, the provenance.
Then each host runs prepare -> rsync -> finish on its own worker thread; a host that fails
becomes a result, never an exception, so it cannot stop the others.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchctl.clusters import Cluster, Host
from patchctl.errors import ManifestError
from patchctl.migrate import fileset, provenance, render, ssh, transfer, verify_remote
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
            progress: ProgressFn | None = None) -> MigrateResult:
    example = render.find_example(root, patchsets)
    generated = (render.GIT_IGNORE,) if example else ()
    labels = _labels(cluster)
    rendered = [render.rendered_files(cluster, h, example) for h in cluster.hosts]
    fs = fileset.collect(root, cluster, generated)
    tags = verify_remote.tags_request(fs, {p.tag for ps in patchsets for p in ps.patches}, generated)
    lock = threading.Lock()

    def emit(event: Progress) -> None:
        if progress is not None:
            with lock:
                progress(event)

    # /tmp, not $TMPDIR: the control sockets live here and a unix socket path is short
    with tempfile.TemporaryDirectory(prefix="pcm-", dir="/tmp" if Path("/tmp").is_dir() else None) as tmp:
        files_from = Path(tmp) / "files"
        files_from.write_bytes(b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in fs.paths))
        shared = _Shared(cluster, fs, files_from, [e.as_manifest() for e in fs.entries], tags,
                         provenance.build(fs, cluster), options, cluster.timeout + fs.size / 20e6)
        for label in labels:
            emit(Progress(label, Phase.QUEUED))
        with ThreadPoolExecutor(max_workers=max(1, options.jobs or len(cluster.hosts))) as pool:
            futures = [pool.submit(_connected, shared, h, label, files, emit, ssh.Master(cluster, h, Path(tmp), i))
                       for i, (h, label, files) in enumerate(zip(cluster.hosts, labels, rendered))]
            results = tuple(f.result() for f in futures)
    return MigrateResult(cluster.name, str(root), fs.commit, len(fs.entries), results, options.dry_run)


def _guard(shared: _Shared, count: int) -> str:
    c = shared.cluster
    return (f"--delete would remove {count} files, more than max_delete = {c.max_delete}; nothing was sent or "
            f"deleted — check the source tree, or raise clusters.{c.name}.max_delete in {c.source}")


def _connected(shared: _Shared, host: Host, label: str, rendered: dict[str, str], emit: ProgressFn,
               master: ssh.Master) -> HostResult:
    """One host's run over its own master connection, closed whatever happens."""
    start = time.monotonic()
    emit(Progress(label, Phase.CONNECTING))
    try:
        failed = master.open()
        if failed:
            result = HostResult(label, host.root, HostStatus.UNREACHABLE, 0, 0, time.monotonic() - start, False,
                                failed)
            emit(Progress(label, Phase.DONE, status=result.status))
            return result
        return _host(shared, host, label, rendered, emit, master.socket, start)
    finally:
        master.close()


def _host(shared: _Shared, host: Host, label: str, rendered: dict[str, str], emit: ProgressFn, control: Path,
          start: float) -> HostResult:
    opts, cluster = shared.options, shared.cluster
    sent = {"files": 0, "bytes": 0}

    def done(status: HostStatus, reason: str = "", **kw: Any) -> HostResult:
        result = HostResult(label, host.root, status, sent["files"], sent["bytes"], time.monotonic() - start,
                            reason=reason, verified=kw.pop("verified", False), **kw)
        emit(Progress(label, Phase.DONE, result.files_sent, result.bytes_sent, status))
        return result

    request = {"manifest": shared.manifest, "rendered": rendered, "delete": opts.delete,
               "max_delete": cluster.max_delete}

    def prepare(action: str) -> verify_remote.AgentReply:
        emit(Progress(label, Phase.PREPARING))
        return verify_remote.call(cluster, host, dict(request, action=action), shared.timeout, control)

    if opts.dry_run or opts.delete:  # the delete guard runs before any byte is sent
        prep = prepare("plan" if opts.dry_run else "prepare")
        if prep.failure:
            return done(prep.failure, prep.reason)
        if opts.dry_run:
            return _plan(shared, host, prep.data, done, sent, control)
        if prep.data["delete_refused"]:
            return done(HostStatus.FAILED, _guard(shared, len(prep.data["deletions"])))

    def on_item(item: transfer.Item) -> None:
        if item.is_file_sent:
            sent["files"] += 1
            sent["bytes"] += item.sent
            emit(Progress(label, Phase.TRANSFERRING, sent["files"], sent["bytes"]))

    emit(Progress(label, Phase.TRANSFERRING))
    tr = transfer.send(cluster, host, shared.fs.root, shared.files_from, checksum=opts.checksum,
                       control=control, on_item=on_item)
    if tr.returncode not in (0, 255) and not (opts.delete or opts.dry_run):
        # rsync creates only the last component of a missing root: on a first run whose root's
        # parent is missing too, create the root and try once more
        prep = prepare("prepare")
        if prep.failure:
            return done(prep.failure, prep.reason)
        if not prep.data["root_exists"]:
            tr = transfer.send(cluster, host, shared.fs.root, shared.files_from, checksum=opts.checksum,
                               control=control, on_item=on_item)
    if tr.returncode != 0:
        status = HostStatus.UNREACHABLE if tr.returncode == 255 else HostStatus.FAILED
        return done(status, transfer.cause(tr.returncode, tr.stderr) + "; re-run migrate to resume")
    emit(Progress(label, Phase.VERIFYING, sent["files"], sent["bytes"]))
    fin = verify_remote.call(cluster, host, dict(request, action="finish", tags=shared.tags,
                                                 provenance=shared.provenance), shared.timeout, control)
    if fin.failure:
        return done(fin.failure, "sent, but not verified: " + fin.reason)
    if fin.data["delete_refused"]:  # the source changed between prepare and finish
        return done(HostStatus.FAILED, _guard(shared, len(fin.data["deletions"])) + " (after the transfer)")
    mismatches = verify_remote.mismatches(fin)
    common = dict(deleted=tuple(fin.data["deletions"]), rendered=tuple(fin.data["rendered"]))
    if not mismatches:
        return done(HostStatus.OK, verified=True, **common)
    return done(HostStatus.MISMATCH, _mismatch_reason(fin.data, len(mismatches)), mismatches=mismatches, **common)


def _mismatch_reason(data: dict[str, Any], count: int) -> str:
    hints = []
    if data.get("problems"):
        hints.append("run migrate again with --checksum to resend files by content")
    if data.get("tags_only_here"):
        hints.append("--delete removes files deleted at the source; other tagged files there are hand edits")
    return f"{count} difference(s) on the host after the transfer; " + "; ".join(hints or ["see the list"])


def _plan(shared: _Shared, host: Host, data: dict[str, Any], done: Callable[..., HostResult],
          sent: dict[str, int], control: Path) -> HostResult:
    """--dry-run: what rsync would send, what --delete would remove, which generated files change."""
    if data["root_exists"]:
        tr = transfer.send(shared.cluster, host, shared.fs.root, shared.files_from, dry_run=True,
                           checksum=shared.options.checksum, control=control)
        if tr.returncode != 0:
            status = HostStatus.UNREACHABLE if tr.returncode == 255 else HostStatus.FAILED
            return done(status, transfer.cause(tr.returncode, tr.stderr))
        would = [(i.path, i.size) for i in tr.items if i.is_file_sent]
    else:
        would = [(e.path, e.size) for e in shared.fs.entries]
    sent["files"], sent["bytes"] = len(would), sum(size for _, size in would)
    changes = ([f"send {p}" for p, _ in would] + [f"delete {p}" for p in data["deletions"]]
               + [f"render {p}" for p in data["rendered"]])
    if data["delete_refused"]:
        return done(HostStatus.FAILED, _guard(shared, len(data["deletions"])), changes=tuple(changes))
    return done(HostStatus.PLANNED, "" if data["root_exists"] else f"{host.root} does not exist yet",
                changes=tuple(changes))
