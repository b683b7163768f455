"""What every host of a migrate shares, computed once before any host is touched (plan, then write).

The file set and its sha256 manifest, the file list rsync reads, the tag inventory and the
provenance: all local work, done while the hosts log in (see ``runner``), so a host's run only
sends and checks.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchctl.clusters import Cluster
from patchctl.migrate import filelist, fileset, hashcache, provenance, seal, verify_remote
from patchctl.migrate.listing import Listing
from patchctl.migrate.options import Options
from patchctl.patchsets.model import Patchset


@dataclass(frozen=True)
class Prepared:
    """The tree as every host receives it, and how the hosts' runs go (the options)."""

    cluster: Cluster
    #: the files to send, with their sha256
    fs: fileset.FileSet
    #: their paths for rsync's ``--files-from --from0`` (whole folders named once, see filelist)
    files_from: filelist.SendList
    #: what the host's agent checks every file against: one ``[path, kind, digest, executable]`` each,
    #: as JSON, encoded once for every host (100k files make some 12 MB)
    manifest: bytes
    #: the tag rule and the source's tagged lines (see verify_remote.tags_request)
    tags: dict[str, Any]
    #: written to each host's .patchctl/provenance.json
    provenance: dict[str, Any]
    options: Options
    #: seconds to wait for one agent call (grows with the tree: the host may hash all of it)
    timeout: float
    #: the digest of what the hosts are asked to hold (see seal)
    summary: seal.Summary
    #: how long the file set took here (listing, hashing, the tag inventory): each host's first phase
    seconds: float = 0.0


@dataclass(frozen=True)
class Pending:
    """What a host's run can use before the tree is prepared: the source, the options, and the
    stages of the preparation as they come (the file list, the summary, then everything)."""

    cluster: Cluster
    root: Path
    options: Options
    #: rsync's file list, set once the paths are known, before any file is hashed
    listed: Future[filelist.SendList] = field(default_factory=Future)
    ready: Future[Prepared] = field(default_factory=Future)
    #: what the hosts are asked to hold (seal.Summary): from the source's seal right after the
    #: walk when the tree is sealed, else once it is prepared
    summary: Future[seal.Summary] = field(default_factory=Future)
    #: whether the walk gave the seal of the last preparation (see seal), set right after the
    #: walk: when it did not, no host's seal can name what is asked now, and no host waits for one
    sealed: Future[bool] = field(default_factory=Future)
    #: set by the first host that needs the prepared tree: a sealed tree is prepared only then
    wanted: Future[bool] = field(default_factory=Future)
    #: when the preparation began (a host judged by its seal counts its file set from here)
    began: float = field(default_factory=time.monotonic)

    def want(self) -> None:
        """A host needs the prepared tree (its own seal did not settle it)."""
        with contextlib.suppress(InvalidStateError):  # another host asked first
            self.wanted.set_result(True)

    def fail(self, exc: BaseException) -> None:
        """The preparation failed: every host waiting for a stage of it stops with ``exc``."""
        for stage in (self.listed, self.sealed, self.summary, self.ready):
            with contextlib.suppress(InvalidStateError):
                stage.set_exception(exc)


def prepare(
    root: Path,
    patchsets: Sequence[Patchset],
    generated: tuple[str, ...],
    tmp: Path,
    pending: Pending,
    asked: Listing | None = None,
    needed: Callable[[], bool] = lambda: True,
) -> Prepared | None:
    """Everything the hosts share; ``tmp`` holds the file list (the session's private directory).
    Each stage is handed to the hosts through ``pending`` as soon as it is known: rsync's file
    list before any file is hashed (a first transfer starts while they are), the summary, then
    the tree, before the hash cache is written (a first run's cache of 100k files takes ~0.2 s
    to encode and write). ``asked``: git's answers about ``root``, asked earlier (see listing).

    A tree whose walk gives the seal of the last preparation (see seal) hands its summary on at
    once and is prepared only if ``needed()`` (which waits for the hosts to tell) says a host
    needs more than its own seal: None when none did."""
    began = time.monotonic()
    cluster, options = pending.cluster, pending.options
    rule = verify_remote.tag_rule({p.tag for ps in patchsets for p in ps.patches})
    asked = asked if asked is not None and asked.is_for(root) else Listing(root)
    since = hashcache.clock()  # before the walk: the hash cache's and the seal's racily clean rule
    walked = fileset.walk(root, cluster, generated, asked)
    pending.listed.set_result(filelist.SendList(tmp / "files", root, walked.paths))
    head = fileset.changes(asked)
    kept = None if options.checksum else seal.load(root, cluster.name)
    # without a seal kept (a first run), the walk's is worked out after the hosts have the tree
    sealed = seal.of(walked, cluster, rule, generated, head) if kept is not None else None
    pending.sealed.set_result(kept is not None and kept[0] == sealed)
    if kept is not None and kept[0] == sealed:
        pending.summary.set_result(kept[1])
        if not needed():
            return None
    cache = hashcache.load(root, rule, not options.checksum, since)
    fs = fileset.hashed(walked, cache, head)
    tags = verify_remote.tags_request(fs, rule, generated, cache)
    manifest = provenance.encode_manifest(fs)
    record = provenance.build(fs, cluster, manifest)
    summary = seal.summarize(record["manifest_sha256"], tags, record, len(fs.entries))
    tree = Prepared(
        cluster,
        fs,
        pending.listed.result(),
        manifest,
        tags,
        record,
        options,
        cluster.timeout + fs.size / 20e6,
        summary,
        time.monotonic() - began,
    )
    with contextlib.suppress(InvalidStateError):  # set already from the seal
        pending.summary.set_result(summary)
    pending.ready.set_result(tree)
    hashcache.save(root, cache)  # after the tags: they fill the records' tagged lines
    if seal.settled(walked, since):
        sealed = sealed or seal.of(walked, cluster, rule, generated, head)
        seal.save(root, cluster.name, sealed, summary)
    else:
        seal.save(root, cluster.name, None, summary)
    return tree


def repair_list(tree: Prepared, paths: list[str]) -> Path:
    """One host's own file list for a re-send, beside the shared one (removed with it)."""
    fd, name = tempfile.mkstemp(dir=tree.files_from.file.parent, prefix="repair-")
    os.close(fd)
    filelist.write_list(Path(name), paths)
    return Path(name)
