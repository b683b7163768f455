"""``patchctl refresh``: take the conflicts the user resolved into the patchset (``quilt refresh``).

Each conflict ``apply --conflicts=markers`` wrote is cut out of the edited file between the
untouched texts recorded around it (:mod:`patchctl.patchsets.conflicts`); a conflict still
holding a marker line, or a file edited outside its conflicts, is refused by name, and nothing
is recorded. Each resolution goes into the patchset's ``resolutions.toml`` keyed by the patch
id and the hash of upstream's text there, so apply and matrix replay it wherever the same
conflict comes back (``git rerere``); the patch's own texts stay as captured, so it still fits
the versions it fitted. A conflict left as upstream's text is a "keep upstream" record: the
patch is dropped on the tree's version and every later one (``superseded-upstream``), so that
conflict no longer blocks each apply (issue 38). The tree's record then lists the patch as applied (revert and verify
find it through the resolution) and its list of conflicts is emptied, in one journaled write.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any

from patchctl import fsutil
from patchctl.errors import ConflictUnresolved, PatchctlError
from patchctl.patchsets import conflicts, resolutions
from patchctl.patchsets import record as rec
from patchctl.patchsets.model import Patchset, Resolution
from patchctl.patchsets.placement.pyparse import split_lines
from patchctl.target import Target

#: a line that starts like one of the markers apply writes (git's own, too)
MARKERS = ("<<<<<<< ", "||||||| ", "=======", ">>>>>>> ")


@dataclass(frozen=True)
class Refreshed:
    patchset: str
    patch: str
    path: str
    #: the key the resolution was recorded under (sha256 of upstream's text there)
    context: str
    #: True: written into ``resolutions.toml`` (an edited resolution, or a "keep upstream")
    recorded: bool
    kind: str = "structural"
    #: a delete-file conflict resolved to an empty file: refresh deletes it, as the patch does
    deleted: bool = False
    #: the user kept upstream's text: recorded as "keep upstream", the patch dropped from ``since`` on
    kept: bool = False
    #: the tree's verl version the keep holds from ("" when the tree declares none)
    since: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "patchset": self.patchset,
            "patch": self.patch,
            "path": self.path,
            "context": self.context,
            "recorded": self.recorded,
            "kind": self.kind,
            "deleted": self.deleted,
            "kept": self.kept,
            "since": self.since,
        }


class NothingToRefresh(PatchctlError):
    def __init__(self, root: object) -> None:
        super().__init__(
            f"{root}: no conflicts wait there (no .patchctl/conflicts.json); "
            "write some with `patchctl apply --conflicts=markers`"
        )


class PatchsetNotWritable(PatchctlError):
    def __init__(self, name: str, why: str) -> None:
        super().__init__(f"patchset {name!r}: {why}; pass it with --patchset DIR (copy a built-in one first)")


def _ends(lines: list[str], marks: list[conflicts.Marked], start: int) -> list[list[int]]:
    """Every way (at most two) to end the conflicts ``marks`` so that the untouched text after
    each follows it and the last one ends the file: the line where each conflict's text ends.
    Memoised by (conflict, line): a one-line gap such as a blank line matches in many places."""
    memo: dict[tuple[int, int], list[list[int]]] = {}

    def ways(k: int, pos: int) -> list[list[int]]:
        if (k, pos) not in memo:
            m, found = marks[k], []
            last = k == len(marks) - 1
            for at in [len(lines) - m.next_lines] if last else range(pos, len(lines) - m.next_lines + 1):
                if at >= pos and conflicts.digest(lines[at : at + m.next_lines]) == m.next_sha:
                    found += [[at]] if last else [[at, *more] for more in ways(k + 1, at + m.next_lines)]
                    if len(found) > 1:
                        break
            memo[(k, pos)] = found[:2]
        return memo[(k, pos)]

    return ways(0, start)


def _cut(lines: list[str], marks: list[conflicts.Marked]) -> list[list[str]]:
    """Each conflict's resolved lines, found between the untouched texts around it. Where the
    untouched text between two conflicts also occurs inside a resolution, the cut could fall in
    two places: that is refused rather than guessed."""
    first = marks[0]
    if conflicts.digest(lines[: first.gap_lines]) != first.gap_sha:
        raise ConflictUnresolved(
            first.path,
            first.patch,
            "has lines above it edited too; edit only inside the conflicts, or restore the file and apply again",
        )
    ways = _ends(lines, marks, first.gap_lines)
    if len(ways) != 1:
        raise ConflictUnresolved(
            first.path,
            first.patch,
            "and the conflicts after it cannot be cut apart: "
            + (
                "lines between or after them were edited too; edit only inside the conflicts"
                if not ways
                else "a resolution holds the lines that separate two conflicts; "
                "resolve them so that it does not, or apply one patch at a time with --only"
            ),
        )
    out, pos = [], first.gap_lines
    for m, at in zip(marks, ways[0], strict=True):
        region = lines[pos:at]
        bad = next((n for n, ln in enumerate(region, pos + 1) if ln.startswith(MARKERS)), None)
        if bad is not None:
            raise ConflictUnresolved(
                m.path, m.patch, f"still has a conflict marker at line {bad}; resolve it and remove the markers first"
            )
        out.append(region)
        pos = at + m.next_lines
    return out


def kind_of(by_name: dict[str, Patchset], m: conflicts.Marked) -> str:
    patch = by_name[m.patchset].get(m.patch)
    return patch.kind if patch is not None else ""


def refresh(target: Target, patchsets: list[Patchset]) -> list[Refreshed]:
    """Record every resolved conflict of ``target`` in its patchset; all or none."""
    root = target.root
    pending = conflicts.load(root)
    if not pending:
        raise NothingToRefresh(root)
    by_name = {ps.name: ps for ps in patchsets}
    todo: list[tuple[conflicts.Marked, str]] = []
    for rel in dict.fromkeys(m.path for m in pending):
        marks = [m for m in pending if m.path == rel]
        text = (root / rel).read_text(encoding="utf-8") if (root / rel).is_file() else ""
        todo += [(m, "".join(r)) for m, r in zip(marks, _cut(split_lines(text), marks), strict=True)]
    for m, _ in todo:
        ps = by_name.get(m.patchset)
        if ps is None or ps.get(m.patch) is None:
            raise PatchsetNotWritable(m.patchset, f"it holds the conflicting patch {m.patch!r} but was not given")
        if ps.builtin:
            raise PatchsetNotWritable(m.patchset, "it is built into patchctl and cannot record resolutions")
    for m, resolved in todo:
        if not resolved and resolved != m.upstream and not (m.whole and kind_of(by_name, m) == "delete-file"):
            raise ConflictUnresolved(
                m.path,
                m.patch,
                "is resolved to nothing; keep upstream's text there to drop the patch from this version on",
            )
    done = []
    for m, resolved in todo:
        context = resolutions.context_of(m.upstream)
        keep = resolved == m.upstream  # "keep upstream": the patch is dropped here and on later versions
        resolutions.record(
            by_name[m.patchset].root,
            m.patch,
            Resolution(
                context,
                m.indent,
                m.upstream,
                resolved,
                f"verl {m.version}" if m.version else str(root),
                m.above,
                m.below,
                m.blocks,
                m.whole,
                keep,
                m.version if keep else "",
            ),
        )
        kind = kind_of(by_name, m)
        gone = m.whole and not resolved and kind == "delete-file"
        since = m.version if keep else ""
        done.append(Refreshed(m.patchset, m.patch, m.path, context, True, kind, gone, keep, since))
    _settle(target, patchsets, done)
    return done


def _settle(target: Target, patchsets: list[Patchset], done: list[Refreshed]) -> None:
    """The tree's record lists each recorded patch as applied; its conflict list goes (and a
    delete-file's emptied file, which its resolution deletes)."""
    record = rec.load(target.root) or rec.Record(target.version, target.commit)
    now = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    changes = {conflicts.STATE_PATH: fsutil.FileChange(conflicts.STATE_PATH, None)}
    for d in done:
        record.entries = [e for e in record.entries if (e.patchset, e.patch) != (d.patchset, d.patch)]
        if d.deleted and (target.root / d.path).exists():
            changes[d.path] = fsutil.FileChange(d.path, None)
        if d.recorded and not d.kept:
            sha = None if d.deleted else fsutil.sha256_file(target.root / d.path)
            undo = {"resolution": d.context}  # revert goes back through the resolution
            record.entries.append(rec.Entry(d.patchset, d.patch, d.kind, d.path, None, sha, now, undo))
    for ps in patchsets:
        if any(d.patchset == ps.name for d in done):
            record.patchsets[ps.name] = {"digest": ps.digest, "source": str(ps.root)}
    changes[rec.RECORD_PATH] = fsutil.FileChange(rec.RECORD_PATH, record.to_bytes())
    fsutil.write_all(target.root, changes, command="refresh")
