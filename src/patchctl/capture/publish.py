"""Capture's last step: the proven patchset renamed into ``--out``, surviving ``kill -9``.

The scratch folder is made beside ``--out`` (same file system, so the swap is two renames) and
named so that the next capture finds what a killed one left there: :func:`recover` removes a
staging folder and puts back or drops the old patchset moved aside (docs/reliability.md).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from patchctl import journal
from patchctl.capture.stage import Staged
from patchctl.errors import BadOptionValue, PatchctlError
from patchctl.patchsets.loader import MANIFEST


@dataclass(frozen=True)
class Published:
    #: where the patchset was written; None on a dry run or when nothing was captured
    out: Path | None
    #: what the user should know about ``--out``, if anything
    note: str | None = None


def _not_a_patchset(out: Path) -> PatchctlError:
    return PatchctlError(f"--out {out}: exists and is not a patchset directory; choose a new or empty directory")


def check_out(out: Path | None) -> None:
    """Refuse an ``--out`` that holds something other than a patchset, before any work is done."""
    if out is not None and out.exists() and out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).is_file():
        raise _not_a_patchset(out)


def check_apart(out: Path | None, trees: Mapping[str, Path | None]) -> None:
    """Refuse an ``--out`` inside FORK or BASE (the patchset and its scratch folder would land in
    the tree capture reads), or one that holds either (publishing swaps ``--out`` away whole)."""
    if out is None:
        return
    real = out.resolve()
    for name, tree in trees.items():
        if tree is None:
            continue
        top = tree.resolve()
        where = "is inside" if real == top or top in real.parents else "holds" if real in top.parents else None
        if where:
            fix = "choose a directory outside FORK and BASE"
            raise BadOptionValue("--out", str(out), f"{where} {name} ({tree}); {fix}")


def scratch(out: Path | None) -> tempfile.TemporaryDirectory[str]:
    """The scratch folder of one capture: beside ``out``, where :func:`recover` will look for it."""
    prefix = f".{out.name}.capture-" if out is not None else ".patchctl-capture-"
    return tempfile.TemporaryDirectory(prefix=prefix, dir=out.resolve().parent if out is not None else None)


def recover(out: Path) -> str | None:
    """Make ``out``'s parent, and mend what a capture killed half-way left beside ``out``."""
    out.resolve().parent.mkdir(parents=True, exist_ok=True)
    return _recover_out(out.resolve())


def publish(staged: Staged, out: Path | None) -> Published:
    """Swap ``staged`` in at ``out`` (None: a dry run, nothing written)."""
    if out is None:
        return Published(None)
    if staged.where is None:
        return Published(None, "nothing was captured, so --out was not written")
    _swap(staged.where, out.resolve())
    return Published(out)


def _swap(staged: Path, out: Path) -> None:
    """Swap the staged patchset in with two renames; :func:`_recover_out` mends a kill in between."""
    if out.exists():
        if any(out.iterdir()) and not (out / MANIFEST).is_file():
            raise _not_a_patchset(out)
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        journal.step()
        os.replace(out, old)
        journal.step()
        os.replace(staged, out)
        journal.step()
        shutil.rmtree(old, ignore_errors=True)
    else:
        journal.step()
        os.replace(staged, out)


def _recover_out(out: Path) -> str | None:
    """Undo what a capture killed half-way left beside ``out``: its staging folder, and the old
    patchset it had moved aside (put back when ``out`` is missing, dropped when the new one is in)."""
    said = None
    for stale in sorted(out.parent.glob(f".{out.name}.capture-*")):
        shutil.rmtree(stale, ignore_errors=True)
        said = f"--out {out}: removed the staging folder of an interrupted capture; {out} is as it was"
    for old in sorted(out.parent.glob(f".{out.name}.old-*")):
        if out.exists():
            shutil.rmtree(old, ignore_errors=True)
            said = f"--out {out}: an interrupted capture had written the new patchset; finished its clean-up"
        else:
            os.replace(old, out)
            said = f"--out {out}: an interrupted capture was rolled back; the previous patchset is back"
    return said
