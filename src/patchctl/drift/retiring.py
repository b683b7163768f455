"""Plan a retirement on one target, then write the new patchset all-or-nothing beside ``--out``."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchctl import fsutil
from patchctl.drift.retire import Retired, absorbed, disagreements, record, without
from patchctl.drift.sides import open_side, spec
from patchctl.errors import PatchctlError
from patchctl.patchsets import resolutions
from patchctl.patchsets.loader import MANIFEST, load_patchset
from patchctl.patchsets.model import Outcome, Patchset
from patchctl.patchsets.plan import plan_apply

RECORD = "retired.json"


class OutExists(PatchctlError):
    def __init__(self, out: Path) -> None:
        super().__init__(f"--out {out}: already exists; name a new folder (retire never overwrites a patchset)")


class RecordUnreadable(PatchctlError):
    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(
            f"{path}: not a retirement record ({problem}); restore it from git, or move it away to start a new record"
        )


class AllRetired(PatchctlError):
    def __init__(self, patchset: str, target: str) -> None:
        super().__init__(
            f"patchset {patchset}: every patch is superseded upstream on {target}, so no patchset "
            "is left to write; run without --out to see the record, and stop loading this patchset"
        )


@dataclass(frozen=True)
class Retirement:
    target: str
    version: str | None
    patchset: str
    retired: tuple[Retired, ...]
    kept: tuple[str, ...]
    #: where metadata and findings disagree
    problems: tuple[str, ...]
    #: the new patchset, None on a dry run or when nothing was retired
    out: Path | None

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "version": self.version,
            "patchset": self.patchset,
            "retired": [r.to_json() for r in self.retired],
            "kept": list(self.kept),
            "disagreements": list(self.problems),
            "out": str(self.out) if self.out else None,
        }


def retire(
    target: str, patchset: Patchset, out: Path | None, repo: Path | None = None, since: str | None = None
) -> Retirement:
    """Retire ``patchset``'s patches superseded on ``target``; write the rest to ``out`` (None: dry run)."""
    if out is not None and os.path.lexists(out):
        raise OutExists(out)
    with tempfile.TemporaryDirectory(prefix="patchctl-retire-") as tmp:
        side = open_side(spec(target, repo, "--target"), Path(tmp) / "target")
        results = {r.patch: r for r in plan_apply(side.target, [patchset]).results}
        gone = [p for p in patchset.patches if results[p.id].status is Outcome.SUPERSEDED_UPSTREAM]
        retired = [absorbed(repo, since, side, patchset, p, results[p.id]) for p in gone]
    kept = [(p, results[p.id]) for p in patchset.patches if p not in gone]
    problems = disagreements(retired, kept, side.target.version)
    if out is not None and retired and not kept:
        raise AllRetired(patchset.name, target)
    written = _write(patchset, out, retired, target, problems) if out is not None and retired else None
    return Retirement(
        side.label,
        side.target.version,
        patchset.name,
        tuple(retired),
        tuple(p.id for p, _ in kept),
        tuple(problems),
        written,
    )


def _write(patchset: Patchset, out: Path, retired: list[Retired], target: str, problems: list[str]) -> Path:
    """Copy, cut, prove it loads, then one rename: ``out`` is the whole new patchset or absent.

    The copy keeps the patchset's symlinks as links, so the two files written into it go through
    :func:`fsutil.write_into`: a ``retired.json`` that links elsewhere is replaced, not written
    through (issue 41).
    """
    earlier = _earlier(patchset.root / RECORD)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.retire-", dir=out.parent))
    try:
        new = stage / "patchset"
        shutil.copytree(patchset.root, new, symlinks=True, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        cut = without(patchset.manifest.read_text(encoding="utf-8"), {r.patch for r in retired})
        fsutil.write_into(new, MANIFEST, cut.encode("utf-8"))
        if (new / resolutions.FILE).is_file() and not (new / resolutions.FILE).is_symlink():
            resolutions.forget(new, {r.patch for r in retired})  # a retired patch's keep-upstream goes with it
        load_patchset(new)  # the cut manifest must still be a valid patchset
        doc = json.loads(record(retired, target, problems))
        doc["retired"] = earlier + doc["retired"]
        fsutil.write_into(new, RECORD, (json.dumps(doc, indent=2) + "\n").encode("utf-8"))
        os.rename(new, out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return out


def _earlier(path: Path) -> list[Any]:
    """The entries of the patchset's own ``retired.json``, kept ahead of the new ones.

    A link is no record of this patchset's: it is replaced, unread. A record that does not read
    as one is refused before anything is written (it is the user's file, not patchctl's to drop).
    """
    if path.is_symlink() or not path.is_file():
        return []
    try:
        doc = json.loads(path.read_bytes())
    except OSError as e:
        raise RecordUnreadable(path, e.strerror or type(e).__name__) from None
    except json.JSONDecodeError as e:
        raise RecordUnreadable(path, f"not JSON: {e.msg} at line {e.lineno}") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise RecordUnreadable(path, f"not JSON: {type(e).__name__}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("retired"), list):
        raise RecordUnreadable(path, "no list under 'retired'")
    return list(doc["retired"])
