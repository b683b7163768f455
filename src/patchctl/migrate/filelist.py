"""The file list rsync reads (``--files-from --from0``), with whole folders named once.

rsync reads a ``--files-from`` list a byte per ``read`` call and checks each listed path's
folders again: 10k listed files cost its sender some 300k system calls, where a recursive copy
of the same folders costs 10k. So a folder whose every entry (down its whole subtree) is a file
migrate sends is listed as the folder, and rsync (``-r``) walks it itself. A folder holding
anything else — an ignored file, an output, ``.git``, a special file, an empty subfolder — is
never named: its sent files are listed one by one, so exactly the file set's paths travel.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path


class SendList:
    """The list every host's first rsync reads, written when the first of them needs it: a
    no-change re-run, whose hosts only check, never pays for looking at the folders."""

    def __init__(self, file: Path, root: Path, paths: Sequence[str]) -> None:
        self.file, self.root, self.paths = file, root, paths
        self._lock = threading.Lock()  # the hosts' threads may all ask at once
        self._written = False

    def path(self) -> Path:
        """The list's file, written on the first call."""
        with self._lock:
            if not self._written:
                write_list(self.file, compact(self.root, self.paths))
                self._written = True
        return self.file


def write_list(path: Path, paths: Sequence[str]) -> None:
    """A file list for rsync's ``--files-from --from0``."""
    path.write_bytes(b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths))


def compact(root: Path, paths: Sequence[str]) -> list[str]:
    """``paths`` (relative, "/"-separated), each folder of ``root`` that holds exactly some of
    them (and nothing else) replaced by the folder itself, outermost first."""
    direct: dict[str, set[str]] = {}
    for path in paths:
        folder, _, name = path.rpartition("/")
        direct.setdefault(folder, set()).add(name)
        while folder:  # every ancestor is a folder that holds something sent
            folder, _, name = folder.rpartition("/")
            direct.setdefault(folder, set())
    complete: dict[str, bool] = {}
    for folder in sorted(direct, key=lambda f: -f.count("/") if f else 1):  # deepest first, the root last
        complete[folder] = bool(folder) and _holds_only(root, folder, direct[folder], complete)
    out, named = [], set()
    for path in paths:
        top = _outermost_complete(path, complete)
        if top is None:
            out.append(path)
        elif top not in named:
            named.add(top)
            out.append(top)
    return out


def _holds_only(root: Path, folder: str, names: set[str], complete: dict[str, bool]) -> bool:
    """Whether ``folder`` holds ``names`` (files sent) and complete subfolders, and nothing else."""
    try:
        with os.scandir(os.path.join(root, folder)) as it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    if not complete.get(f"{folder}/{entry.name}", False):
                        return False
                elif entry.name not in names:
                    return False
    except OSError:
        return False
    return True


def _outermost_complete(path: str, complete: dict[str, bool]) -> str | None:
    """The outermost complete folder that holds ``path``, if any."""
    parts = path.split("/")[:-1]
    for i in range(1, len(parts) + 1):
        folder = "/".join(parts[:i])
        if complete.get(folder, False):
            return folder
    return None
