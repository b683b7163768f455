"""The record of what patchctl applied, kept inside the target tree.

``.patchctl/applied.json`` lists the patchsets and patch ids, the upstream version and commit
the tree started from, and per patch the file's sha256 before and after. Revert reads it, and
it travels with the tree when the tree is migrated, so every copy knows its provenance.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from patchctl.confine import not_a_real_folder, why_outside
from patchctl.errors import PatchctlError
from patchctl.records import asdict, field, record

RECORD_PATH = ".patchctl/applied.json"
FORMAT = 1


@record
class Entry:
    patchset: str
    patch: str
    kind: str
    path: str
    sha256_before: str | None
    sha256_after: str | None
    applied_at: str
    #: facts the kind's revert needs (see Edit.undo)
    undo: dict[str, Any] | None = None


@record
class Record:
    upstream_version: str | None = None
    upstream_commit: str | None = None
    #: patchset name -> {"digest": manifest sha256, "source": "builtin" or a path}
    patchsets: dict[str, dict[str, str]] = field(default_factory=dict)
    entries: list[Entry] = field(default_factory=list)

    def find(self, patchset: str, patch: str) -> Entry | None:
        return next((e for e in self.entries if e.patchset == patchset and e.patch == patch), None)

    def to_bytes(self) -> bytes:
        doc = {
            "format": FORMAT,
            "upstream": {"version": self.upstream_version, "commit": self.upstream_commit},
            "patchsets": self.patchsets,
            "patches": [asdict(e) for e in self.entries],
        }
        return (json.dumps(doc, indent=2, sort_keys=False) + "\n").encode()


def load(root: Path) -> Record | None:
    """The record at ``root``, or None; :class:`RecordDamaged` when it cannot be trusted.

    It is read back from disk, as untrusted as a manifest: the record and its folder must be
    real (not symlinks to elsewhere) and every path in it, resolved through symlinks, inside
    the tree, or revert and verify would read and hash files elsewhere.
    """
    path = root / RECORD_PATH
    for why in (
        not_a_real_folder(path.parent),
        f"{path.name} is a symbolic link (to {os.readlink(path)})" if path.is_symlink() else None,
    ):
        if why:
            raise RecordDamaged(path, why)
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        record = Record(
            doc["upstream"]["version"],
            doc["upstream"]["commit"],
            doc.get("patchsets", {}),
            [Entry(**e) for e in doc["patches"]],
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise RecordDamaged(path, str(exc)) from None
    for e in record.entries:
        problem = why_outside(root, e.path) if isinstance(e.path, str) and e.path else "is not a path"
        if problem:
            raise RecordDamaged(path, f"patch {e.patch!r} names {e.path!r}, which {problem}")
    return record


class RecordDamaged(PatchctlError):
    """The record cannot be trusted; revert without it reverts every patch it finds intact."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        super().__init__(
            f"{path}: the apply record is damaged ({problem}); restore it with git "
            f"(git checkout -- {RECORD_PATH}), or delete it and run `patchctl revert` again, "
            "which then reverts every patch it finds intact"
        )
