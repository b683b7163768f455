"""What every host of a migrate shares, computed once before any host is touched (plan, then write).

The file set and its sha256 manifest, the file list rsync reads, the tag inventory and the
provenance: all local work, done while the hosts log in (see ``runner``), so a host's run only
sends and checks.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchctl.clusters import Cluster
from patchctl.migrate import filelist, fileset, hashcache, provenance, verify_remote
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
    #: how long the file set took here (listing, hashing, the tag inventory): each host's first phase
    seconds: float = 0.0


@dataclass(frozen=True)
class Pending:
    """What a host's run can use before the tree is prepared: the source, the options, and the
    two stages of the preparation as they come (the file list, then everything)."""

    cluster: Cluster
    root: Path
    options: Options
    #: rsync's file list, set once the paths are known, before any file is hashed
    listed: Future[filelist.SendList]
    ready: Future[Prepared]

    def fail(self, exc: BaseException) -> None:
        """The preparation failed: every host waiting for a stage of it stops with ``exc``."""
        for stage in (self.listed, self.ready):
            if not stage.done():
                stage.set_exception(exc)


def prepare(
    cluster: Cluster,
    root: Path,
    patchsets: Sequence[Patchset],
    generated: tuple[str, ...],
    options: Options,
    tmp: Path,
    on_listed: Callable[[filelist.SendList], None] | None = None,
    asked: Listing | None = None,
    on_ready: Callable[[Prepared], None] | None = None,
) -> Prepared:
    """Everything the hosts share; ``tmp`` holds the file list (the session's private directory).
    ``on_listed``: given rsync's file list as soon as the paths are known, before they are hashed.
    ``asked``: git's answers about ``root``, asked earlier (see listing); None asks them now.
    ``on_ready``: given the tree before the hash cache is written, so that the hosts' checks
    start while it is (a first run's cache of 100k files takes ~0.2 s to encode and write)."""
    began = time.monotonic()
    rule = verify_remote.tag_rule({p.tag for ps in patchsets for p in ps.patches})
    cache = hashcache.load(root, rule, not options.checksum)
    listed: list[filelist.SendList] = []

    def publish(paths: list[str]) -> None:
        listed.append(filelist.SendList(tmp / "files", root, paths))
        if on_listed is not None:
            on_listed(listed[0])

    fs = fileset.collect(root, cluster, generated, cache, publish, asked)
    tags = verify_remote.tags_request(fs, rule, generated, cache)
    manifest = provenance.encode_manifest(fs)
    tree = Prepared(
        cluster,
        fs,
        listed[0],
        manifest,
        tags,
        provenance.build(fs, cluster, manifest),
        options,
        cluster.timeout + fs.size / 20e6,
        time.monotonic() - began,
    )
    if on_ready is not None:
        on_ready(tree)
    hashcache.save(root, cache)  # after the tags: they fill the records' tagged lines
    return tree


def repair_list(tree: Prepared, paths: list[str]) -> Path:
    """One host's own file list for a re-send, beside the shared one (removed with it)."""
    fd, name = tempfile.mkstemp(dir=tree.files_from.file.parent, prefix="repair-")
    os.close(fd)
    filelist.write_list(Path(name), paths)
    return Path(name)
