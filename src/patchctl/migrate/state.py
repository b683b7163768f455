"""What each host held when it last verified ok, remembered locally to pick the cheaper order.

Only an ordering hint, never trusted for correctness: when the tree is unchanged since a host
last verified, migrate checks first (one round trip when nothing differs); otherwise it sends
first and checks after (no check before a transfer that is needed anyway). Both orders end in
a verification on the host.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from patchctl import releases
from patchctl.clusters import Cluster, Host


def state_dir() -> Path:
    return releases.cache_dir() / "migrate"


def _file(cluster: Cluster, host: Host) -> Path:
    key = hashlib.sha256(f"{cluster.source}\0{cluster.name}\0{host.ssh}\0{host.root}".encode()).hexdigest()[:32]
    return state_dir() / f"{key}.json"


def digest(manifest_sha256: str, rendered: dict[str, str]) -> str:
    doc = json.dumps([manifest_sha256, sorted(rendered.items())])
    return hashlib.sha256(doc.encode()).hexdigest()


def last_verified(cluster: Cluster, host: Host) -> str | None:
    try:
        digest = json.loads(_file(cluster, host).read_text())["digest"]
        return digest if isinstance(digest, str) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remember(cluster: Cluster, host: Host, value: str) -> None:
    """Best effort: a cache that cannot be written only costs a round trip next time."""
    write_json(_file(cluster, host), {"digest": value, "host": host.ssh, "root": host.root}, ".state-")


def write_json(path: Path, doc: object, prefix: str) -> None:
    """Write ``doc`` to ``path`` whole or not at all (a temporary file beside it, renamed over it).
    Best effort, for migrate's local caches (this state, the hash cache, the source memo): one
    that cannot be written only costs redoing its work next time, so an OSError is swallowed
    and no temporary file is left behind."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix)
    except OSError:
        return
    try:
        with os.fdopen(fd, "w") as f:  # dumps, not dump: only dumps has the C encoder
            f.write(json.dumps(doc, separators=(",", ":")))
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
