"""Changed files that are not Python: configs by key path, requirement lists by package, other
text by hunk, and binary files as blobs.

Each file's edits are drafted as the narrowest kind that re-creates them: a YAML or TOML file as
config-key patches, a requirements file as requirement patches. The drafts are kept only when,
spliced together over BASE, they give exactly the fork's file; otherwise (an edit no key holds,
such as a comment at the top) the file is carried as text hunks, which always re-create it.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Set
from pathlib import Path
from typing import Any

from patchctl import fsutil
from patchctl.capture.hunks import Hunk, diff, why_from
from patchctl.capture.keyed import KINDS, Found, by_key, by_package
from patchctl.capture.model import Classified, Draft, LeftOut, Request, new_id
from patchctl.patchsets import threeway
from patchctl.patchsets.kinds import keypath
from patchctl.patchsets.kinds.base import Context, EditStatus
from patchctl.patchsets.kinds.blob import MAX_BLOB
from patchctl.patchsets.kinds.text_hunk import Params as HunkParams
from patchctl.patchsets.kinds.text_hunk import TextHunk, first_new
from patchctl.patchsets.model import Patch
from patchctl.patchsets.placement.pyparse import split_lines

#: lines of context a text hunk carries on each side, as diff -u
CONTEXT = 3
_REQUIREMENTS = re.compile(r"(^|/)[^/]*requirements[^/]*\.(txt|in)$")


def is_binary(data: bytes) -> bool:
    if b"\0" in data[:8192]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def blob(req: Request, rel: str, data: bytes, replaces: bytes | None, mode: int, taken: Set[str]) -> Classified:
    """A binary file the fork added or changed, shipped whole with its sha256: with ``--all``, or when
    its bytes carry the tag (a binary file seldom can, but one that does is the user's)."""
    tagged = req.rx.search(data.decode("utf-8", errors="replace")) is not None
    if not req.all_ and not tagged:
        return Classified(
            notes=(
                f"{rel}: binary file the fork {'changed' if replaces else 'added'}; binary files "
                "carry no tag, so it is captured with --all only",
            )
        )
    if len(data) > MAX_BLOB:
        return Classified(
            left_out=(
                LeftOut(
                    rel,
                    1,
                    f"binary file of {len(data)} bytes, over the {MAX_BLOB >> 20} MiB "
                    "a blob may have; ship it another way",
                ),
            )
        )
    params: dict[str, Any] = {"source": f"files/{rel}", "sha256": fsutil.sha256_bytes(data), "mode": f"{mode:04o}"}
    if replaces is not None:
        params["replaces"] = fsutil.sha256_bytes(replaces)
    what = "replace" if replaces is not None else "add"
    return Classified(
        (
            Draft(
                new_id(Path(rel).name, taken),
                "blob",
                rel,
                None,
                tagged,
                f"{what} {rel} (binary)",
                "",
                params,
                content=data,
            ),
        )
    )


def changed_text(req: Request, rel: str, base_text: str, fork_text: str, taken: Set[str]) -> Classified:
    """A text file both trees have that is neither Python nor shell."""
    blines, flines = split_lines(base_text), split_lines(fork_text)
    fmt = keypath.fmt_of(rel)
    found: list[Found] | None = None
    if fmt is not None:
        found = by_key(rel, fmt, blines, flines)
    elif _REQUIREMENTS.search(rel):
        found = by_package(rel, blines, flines)
    note: tuple[str, ...] = ()
    if found is None:
        if fmt is not None or _REQUIREMENTS.search(rel):
            note = (
                f"{rel}: an edit outside any {'key' if fmt else 'package line'}; the file is carried as text "
                "hunks instead",
            )
        found = hunks(rel, blines, flines)
    drafts: list[Draft] = []
    skipped = 0
    for kind, params, parsed, line, what, span in found:
        tagged = [n for n in span if 0 < n <= len(flines) and req.rx.search(flines[n - 1])]
        if not tagged and not req.all_:
            skipped += 1
            continue
        stem = params["path"][-1] if kind == "config-key" else params.get("package", "hunk")
        pid = new_id(f"{Path(rel).stem}-{stem}", taken)
        taken = taken | {pid}
        part = KINDS[kind].part(blines, parsed, rel)
        drafts.append(
            Draft(
                pid,
                kind,
                rel,
                line,
                bool(tagged),
                f"{rel}: {what}",
                why_from(flines, tagged, req.tag),
                params,
                part=part,
                base_lines=blines,
            )
        )
    if skipped:
        note += (f"{rel}: {skipped} untagged change(s) not captured (pass --all to capture them)",)
    return Classified(tuple(drafts), (), note)


def hunks(rel: str, blines: list[str], flines: list[str], keep: Callable[[Hunk], bool] = lambda h: True) -> list[Found]:
    """The file's changes as text hunks, one patch per hunk so that each travels alone (issue 38
    requirement 2: one upstream change anywhere in a README used to conflict all its edits).

    A hunk's context is up to :data:`CONTEXT` lines on each side, as ``diff -u``, but only lines
    base and fork share: it stops at the next change, so no hunk's context holds another hunk's
    lines and each finds its place whether or not its neighbours landed. A hunk whose lines then
    occur more than once in BASE, or its new lines more than once in FORK (a lone blank line
    around an inserted line), would be placed by its line number alone, or taken as applied
    already: it joins the hunk next to it, whose lines pin it down. Lines the fork inserted
    between blank lines (a README's new paragraph) are the exception, outside config files: what
    they write is found once, so a check tells them apart, and they travel alone as a
    ``merge_only`` hunk, placed by the 3-way merge from the base text as git places them, where
    joined to a neighbour that upstream reworded they never landed (TinyZero's README, issue 38).
    """
    every = git_hunks(blines, flines) or diff(blines, flines, re.compile(r"(?!x)x"))
    groups: list[tuple[int, int]] = []  # (first, last) index into ``every``
    alone: set[int] = set()  # indexes into ``groups`` of merge-only hunks
    vague = False  # the last group's lines do not pin it down
    for k, h in enumerate(every):
        if not keep(h):
            continue
        near = bool(groups) and h.base[0] - every[groups[-1][1]].base[1] <= 2 * CONTEXT
        blank = keypath.fmt_of(rel) is None and _blank_context(every, k, blines, flines)
        # a vague hunk right after a merge-only one pins itself to the hunk after it instead: joined
        # to the merge-only one, the paragraph the fork inserted would conflict with it again
        after_alone = len(groups) - 1 in alone
        if near and not blank and not after_alone and (vague or _vague(every, k, k, blines, flines)):
            groups[-1] = (groups[-1][0], k)
        else:
            groups.append((k, k))
            if blank:
                alone.add(len(groups) - 1)
        vague = len(groups) - 1 not in alone and _vague(every, *groups[-1], blines, flines)
    if len(groups) > 1 and all(keep(h) for h in every):
        flagged = _settle(rel, every, [(g, i in alone) for i, g in enumerate(groups)], blines, flines)
        groups, alone = [g for g, _ in flagged], {i for i, (_, m) in enumerate(flagged) if m}
    elif len(groups) == 1:
        alone = set()  # a lone hunk of the file: the base text tells its place as well as its lines
    found: list[Found] = []
    for index, (first, last) in enumerate(groups):
        g = every[first : last + 1]
        lo, hi, flo, fhi = _spans(every, first, last, len(blines))
        was, now = "".join(blines[lo:hi]), "".join(flines[flo:fhi])
        if _bare(split_lines(was)) == _bare(split_lines(now)):
            continue  # trailing spaces only: no text a hunk could be found by differs
        raw: dict[str, Any] = {"was": was, "now": now, "line": lo + 1}
        if index in alone:
            raw["merge_only"] = True
        first_line = first_new(was, now) if keypath.fmt_of(rel) == "yaml" else None
        if first_line is not None:  # where the hunk's new line sits, so apply can tell a wrong section (issue 38)
            raw["parent"] = list(keypath.parent_at(flines, flo + first_line))
        changed = sorted({n for h in g for n in h.fork_lines})
        found.append(
            (
                "text-hunk",
                raw,
                HunkParams(was, now, lo + 1, 2, tuple(raw["parent"]) if "parent" in raw else None, index in alone),
                g[0].fork[0] + 1,
                "hunk",
                range(changed[0], changed[-1] + 1) if changed else range(0),
            )
        )
    return found


def _settle(
    rel: str, every: list[Hunk], groups: list[tuple[tuple[int, int], bool]], blines: list[str], flines: list[str]
) -> list[tuple[tuple[int, int], bool]]:
    """The groups (each with whether it is merge-only), joined only where they must be for apply
    to rebuild FORK from BASE.

    apply places the file's hunks one after another, each by its own text nearest its line
    (:class:`~patchctl.patchsets.kinds.text_hunk.TextHunk`), a merge-only one by the 3-way merge
    from the base text. In a file the fork rewrote nearly whole (Search-R1's README), a later
    hunk's old text can turn up in what an earlier one wrote, nearer its line than its own place,
    and the proof on BASE then refused every hunk. Such a hunk used to make the whole file one
    patch, so one upstream change anywhere conflicted all of its edits (issue 38 requirement 2).
    Now the groups are placed in order as apply places them, and only the first one that lands
    elsewhere is joined to the one before it (the two then pin each other down, and are no longer
    merge-only), until every group lands where the fork has it."""
    groups = list(groups)
    hunk, ctx = TextHunk(), Context(Path("."), rel)
    base = "".join(blines)
    texts = [base]  # the text before each group is placed
    want = _bare(flines)
    k = 0
    while k < len(groups):
        (first, last), merge_only = groups[k]
        lo, hi, flo, fhi = _spans(every, first, last, len(blines))
        was, now = "".join(blines[lo:hi]), "".join(flines[flo:fhi])
        if _bare(split_lines(was)) == _bare(split_lines(now)):  # trailing spaces only: no patch is written
            texts.append(texts[k])
            k += 1
            continue
        placed: str | None
        if merge_only:
            placed = threeway.merge("".join([*blines[:lo], now, *blines[hi:]]), base, texts[k])
        else:
            patch = Patch("settle", "", "", "", TextHunk.name, (rel,), HunkParams(was, now, lo + 1, 2))
            edit = hunk.apply(texts[k], patch, ctx)
            placed = edit.text if edit.status is EditStatus.CHANGED else None
        got = _bare(split_lines(placed)) if placed is not None else None
        if got is not None and got[:fhi] == want[:fhi] and (k < len(groups) - 1 or got == want):
            texts.append(placed or "")
            k += 1
            continue
        if len(groups) == 1:
            break
        j = max(k, 1)  # joined to the one before it (the first to the next), and placed again
        groups[j - 1 : j + 1] = [((groups[j - 1][0][0], groups[j][0][1]), False)]
        k = j - 1
        del texts[k + 1 :]
    return groups


def _blank_context(every: list[Hunk], k: int, blines: list[str], flines: list[str]) -> bool:
    """Whether ``every[k]`` inserts lines whose context is blank lines only, and what it writes is
    found once in FORK and nowhere in BASE (so a check finds it, and never takes another copy)."""
    lo, hi, flo, fhi = _spans(every, k, k, len(blines))
    h = every[k]
    if h.base[0] != h.base[1] or any(x.strip() for x in blines[lo:hi]) or not any(x.strip() for x in flines[flo:fhi]):
        return False
    now = flines[flo:fhi]
    return len(_matches(flines, now)) == 1 and not _matches(blines, now)


def _bare(lines: list[str]) -> list[str]:
    """Lines as text-hunk compares them: trailing spaces (and line ends) aside."""
    return [x.rstrip() for x in lines]


def _window(every: list[Hunk], first: int, last: int, size: int) -> tuple[int, int]:
    """BASE lines ``every[first..last]`` cover with their context: up to :data:`CONTEXT` lines
    each side, none of them another change's."""
    before = every[first - 1].base[1] if first else 0
    after = every[last + 1].base[0] if last + 1 < len(every) else size
    return max(before, every[first].base[0] - CONTEXT), min(after, every[last].base[1] + CONTEXT)


def _spans(every: list[Hunk], first: int, last: int, size: int) -> tuple[int, int, int, int]:
    """The BASE lines ``lo:hi`` of :func:`_window` and the FORK lines ``flo:fhi`` they become."""
    lo, hi = _window(every, first, last, size)
    return lo, hi, lo + (every[first].fork[0] - every[first].base[0]), hi + (every[last].fork[1] - every[last].base[1])


def _vague(every: list[Hunk], first: int, last: int, blines: list[str], flines: list[str]) -> bool:
    """Whether text-hunk could not place ``every[first..last]`` by its lines alone: what it
    replaces occurs once in BASE, and what it writes once in FORK and nowhere in BASE (apply
    takes a copy of the new lines found nearer than the old ones as the hunk already applied)."""
    lo, hi, flo, fhi = _spans(every, first, last, len(blines))
    was, now = blines[lo:hi], flines[flo:fhi]
    return (len(_matches(blines, was)), len(_matches(flines, now)), len(_matches(blines, now))) != (1, 1, 0)


def _matches(lines: list[str], piece: list[str]) -> list[int]:
    """Where ``piece`` occurs in ``lines``, trailing spaces aside (as text-hunk finds it)."""
    want = [x.rstrip() for x in piece]
    if not any(want):
        return []  # blank lines only: nothing to find it by
    text = [x.rstrip() for x in lines]
    n = len(want)
    return [i for i in range(len(text) - n + 1) if text[i] == want[0] and text[i : i + n] == want]


_HEADER = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.M)


def git_hunks(blines: list[str], flines: list[str]) -> list[Hunk] | None:
    """The hunks ``git diff`` finds, as the user reads them and ``git apply -3`` merges them.

    difflib matches the longest common run first; in prose that upstream and the fork both
    reword (a README a fork rewrote), it pairs a blank line far away and turns a dozen small
    edits into one run of 40 lines, which travels as one patch. git's Myers diff keeps them
    apart. git runs outside any repository with no user or system config and no external diff
    or textconv, so nothing in the fork configures it; None (difflib then) when git is missing
    or its hunks do not give the fork's lines back (a line break git reads otherwise).
    """
    with tempfile.TemporaryDirectory(prefix="patchctl-hunks-") as tmp:
        a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
        for path, lines in ((a, blines), (b, flines)):
            with open(path, "wb") as f:
                f.write("".join(lines).encode("utf-8", "surrogateescape"))
        env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"}
        env.pop("GIT_DIR", None)
        try:
            done = subprocess.run(
                ["git", "diff", "--no-index", "--no-ext-diff", "--no-textconv", "--no-color", "-U0", "a", "b"],
                cwd=tmp,
                env=env,
                capture_output=True,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
    if done.returncode not in (0, 1):
        return None
    out: list[Hunk] = []
    for m in _HEADER.finditer(done.stdout):
        a0, an = int(m.group(1)), int(m.group(2) or 1)
        f0, fn = int(m.group(3)), int(m.group(4) or 1)
        start, fstart = (a0 if an == 0 else a0 - 1), (f0 if fn == 0 else f0 - 1)
        out.append(Hunk((start, start + an), (fstart, fstart + fn), ()))
    rebuilt: list[str] = []
    at = 0
    for h in out:
        if h.base[0] < at:
            return None
        rebuilt += blines[at : h.base[0]] + flines[h.fork[0] : h.fork[1]]
        at = h.base[1]
    return out if rebuilt + blines[at:] == flines else None
