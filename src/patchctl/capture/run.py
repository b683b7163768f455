"""``patchctl capture``: classify FORK's edits, stage them as a patchset, prove it on BASE, publish it.

Each step is a function of the one before's result (frozen values, :mod:`patchctl.capture.model`):
:func:`~patchctl.capture.classify.classify` drafts a patch of the narrowest kind for each edit,
:func:`~patchctl.capture.stage.stage` writes the drafts to a scratch folder,
:func:`~patchctl.capture.proof.prove` applies them to BASE with the engine and leaves out what it
blames, and :func:`~patchctl.capture.publish.publish` renames what was proven into ``--out``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from patchctl import progress
from patchctl.capture import keep, publish
from patchctl.capture.base import AUTO, fork_files
from patchctl.capture.base import find as find_base
from patchctl.capture.classify import classify
from patchctl.capture.model import Report, Request
from patchctl.capture.proof import outside, prove
from patchctl.capture.sources import base_dir, compared, open_base, open_fork
from patchctl.capture.stage import Header, stage
from patchctl.errors import BadOptionValue, MissingOption, PatchctlError


def capture(
    fork: Path,
    base: str,
    out: Path | None,
    *,
    tag: str = "Uky",
    all_: bool = False,
    include: set[tuple[str, int]] | None = None,
    name: str | None = None,
    repo: Path | None = None,
) -> Report:
    """Capture FORK's edits against BASE into ``out`` (None: report only, write nothing). BASE
    ``auto`` is the commit of ``repo`` (a clone of upstream) FORK is nearest to."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", tag):
        raise BadOptionValue("--tag", repr(tag), "use letters, digits, '_', '.' or '-' (the word after '#')")
    if base == AUTO and repo is None:
        raise MissingOption("capture", "--base auto needs --repo CLONE, a git clone of upstream verl to search")
    publish.check_apart(out, {"FORK": fork, "BASE": None if base == AUTO else base_dir(base)})
    publish.check_out(out)
    fork_tree = open_fork(fork)
    found = None
    if base == AUTO and repo is not None:
        with progress.step(f"capture: finding FORK's base among the commits of {repo}"):
            found = find_base(repo, fork_files(fork_tree.root, fork_tree.files))
        base = found.best.commit
    recovered = publish.recover(out) if out is not None else None
    with publish.scratch(out) as tmp, _outside(Path(tmp)), progress.step(f"capture: reading {fork}") as shown:
        fork_tree, base_tree, skipped = compared(fork_tree, open_base(base, fork_tree.root, Path(tmp), repo))
        req = Request(fork_tree, base_tree, tag, all_, frozenset(include or ()))
        header = Header(name or (out.name if out is not None else "captured"), tag, req.fork.label, req.base_label)

        shown.say(f"capture: comparing {header.fork} with {header.base}")
        classified = classify(req)
        staged = stage(classified.drafts, header, Path(tmp) / "patchset")
        shown.say(f"capture: proving {len(staged.drafts)} patch(es) on {header.base}")
        proven = prove(staged, req.base)  # it keeps the proven patches' base texts beside them
        kept = keep.carry(out, proven.staged.where) if out is not None and proven.staged.where is not None else ()
        published = publish.publish(proven.staged, out)
        beyond = outside(req.fork, req.base, proven.staged.drafts)

    left = classified.left_out + proven.left_out
    notes = ((recovered,) if recovered else ()) + skipped + classified.notes + kept
    notes += (published.note,) if published.note else ()
    if left and published.out is not None:
        notes += (
            (
                f"{len(left)} edit(s) left out, each listed with its reason; the patchset re-creates the "
                "fork's other captured edits, not these"
            ),
        )
    return Report(
        header.fork,
        header.base,
        published.out,
        tuple(d.captured for d in proven.staged.drafts),
        left,
        notes,
        beyond,
        found,
    )


@contextmanager
def _outside(tmp: Path) -> Iterator[None]:
    """No error leaves capture naming its scratch folder, which is gone by the time it is read."""
    try:
        yield
    except PatchctlError as exc:
        text = str(exc)
        if str(tmp) not in text:
            raise
        raise PatchctlError(text.replace(str(tmp), "<capture's scratch folder, removed>")) from None
