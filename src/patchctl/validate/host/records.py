"""``records``: this host's code-hook records of the run, and what migrate placed here, sent home.

Each node's processes record the patched modules they import into the run folder inside that
node's own tree (train/codehook.py; rayup.py sends the folder's path relative to the tree). Only
the head's were ever judged; this action reads any host's, so validate judges every process of
every node. With them go the code patches this tree's apply record lists and the sha256 migrate
recorded for each patched file here (``.patchctl/provenance.json``, ``patched_sha256``): a
process whose imported file hashes otherwise ran code migrate did not place (a tree reverted or
edited after migrate, at the very path of the good one).

Only regular files named ``<pid>.jsonl`` are read, never through a link, at most
:data:`MAX_BYTES` in all: the folder is written by the run's processes, not by patchctl.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: what one host may send home; a run's records are a few KiB per process
MAX_BYTES = 8 * 1024 * 1024
_NAME = re.compile(r"^[0-9]{1,10}\.jsonl$")


def _read(folder: Path) -> tuple[dict[str, str], bool]:
    """``{name: text}`` of the records; True when some were left out (over the byte budget)."""
    out: dict[str, str] = {}
    left = MAX_BYTES
    try:
        names = sorted(n for n in os.listdir(folder) if _NAME.match(n))
    except OSError:
        return {}, False
    for name in names:
        try:
            fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            data = f.read(left + 1)
        if len(data) > left:
            return out, True
        left -= len(data)
        out[name] = data.decode("utf-8", "replace")
    return out, False


def _migrated(root: Path) -> dict[str, str] | None:
    """migrate's record of the patched files' sha256 here; None where it recorded none."""
    try:
        doc = json.loads((root / ".patchctl" / "provenance.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    got = doc.get("patched_sha256") if isinstance(doc, dict) else None
    if not isinstance(got, dict):
        return None
    return {str(k): str(v) for k, v in got.items() if isinstance(v, str)}


def run(request: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> int:
    from patchctl.train import codehook

    root = Path.cwd().resolve()
    folder = (root / str(request.get("run_rel", "")) / codehook.DIR_NAME / "records").resolve()
    if not folder.is_relative_to(root):
        emit({"event": "error", "error": f"the run folder {request.get('run_rel')!r} leads out of {root}"})
        return 0
    records, cut = _read(folder)
    emit(
        {
            "event": "reply",
            "root": str(root),
            "records": records,
            "cut": cut,
            "watches": [[w.patchset, w.patch, w.module, w.path] for w in codehook.watches(root)],
            "migrated": _migrated(root),
        }
    )
    return 0
