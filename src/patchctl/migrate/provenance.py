"""Where a host's tree came from, written to ``.patchctl/provenance.json`` on the host.

``.git`` is not copied (a verl history is larger than the tree and the hosts only run code):
instead each host records the commit, the files that differ from it, the patchsets applied
(from ``.patchctl/applied.json``) and a digest of the exact manifest that was verified, so
``cat .patchctl/provenance.json`` on a node answers "what is this tree?".
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import socket
from typing import Any

from patchctl import __version__
from patchctl.clusters import Cluster
from patchctl.migrate.fileset import FileSet
from patchctl.patchsets import record as rec

#: changed paths listed in full; beyond this only the count is kept
LISTED = 200


def encode_manifest(fs: FileSet) -> bytes:
    """What every host's agent checks its files against, as JSON: ``[path, kind, digest, executable]``
    per file; encoded once, for every host's request and for the digest provenance records."""
    return json.dumps([e[:4] for e in fs.entries], separators=(",", ":")).encode()  # path, kind, digest, executable


def _patched_digests(fs: FileSet, record: rec.Record | None) -> dict[str, str]:
    wanted = {e.path for e in record.entries} if record else set()
    return {e.path: e.digest for e in fs.entries if e.path in wanted and e.kind == "f"}


def build(fs: FileSet, cluster: Cluster, manifest: bytes) -> dict[str, Any]:
    """The host-independent part; the agent adds the host's root and the verification outcome.
    ``manifest``: ``encode_manifest(fs)``, whose digest is recorded."""
    record = rec.load(fs.root)
    return {
        "format": 1,
        "commit": fs.commit,
        "changes_since_commit": list(fs.changed[:LISTED]),
        "changes_count": len(fs.changed),
        "upstream": {"version": record.upstream_version, "commit": record.upstream_commit} if record else None,
        "patchsets": record.patchsets if record else {},
        "patches": [{"patchset": e.patchset, "patch": e.patch, "path": e.path} for e in record.entries]
        if record
        else [],
        # what each patched file must hash to on the host: validate compares the sha256 of what every
        # process of a run imported with this, so a tree reverted after migrate fails there
        "patched_sha256": _patched_digests(fs, record),
        "migrated_at": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "source_host": socket.gethostname(),
        "source_root": str(fs.root),
        "cluster": cluster.name,
        "files": len(fs.entries),
        "manifest_sha256": hashlib.sha256(manifest).hexdigest(),
        "patchctl": __version__,
    }
