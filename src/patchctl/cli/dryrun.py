"""What ``apply --dry-run`` prints: a ``git apply --stat`` summary first, the diff on request.

On a checkout the full diff ran to 1,858 lines, the text of eleven added files (scripts and docs)
before the two code changes a user wanted to check (issue 39). So a dry run now prints one line
per file, as ``git apply --stat`` does, and ``--diff`` prints the diff with edits of existing files
before added and deleted ones, through a pager on a terminal, as git shows its diffs.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import click


@dataclass(frozen=True)
class FileDiff:
    """One file's part of a unified diff."""

    path: str
    text: str
    #: "modified", "added" or "deleted"
    change: str
    insertions: int
    deletions: int


def split(diff: str) -> list[FileDiff]:
    """The unified diff of many files cut into one part per file.

    A file's part starts at a ``--- `` line that a ``+++ `` line and a hunk header follow: a
    removed line reading ``-- x`` is followed by another body line, never by both of those.
    """
    lines = diff.splitlines(keepends=True)
    starts = [
        i
        for i in range(len(lines) - 2)
        if lines[i].startswith("--- ") and lines[i + 1].startswith("+++ ") and lines[i + 2].startswith("@@ ")
    ]
    out = []
    for k, i in enumerate(starts):
        body = lines[i : starts[k + 1] if k + 1 < len(starts) else len(lines)]
        old, new = body[0][4:].rstrip("\n"), body[1][4:].rstrip("\n")
        change = "added" if old == "/dev/null" else "deleted" if new == "/dev/null" else "modified"
        name = (old if change == "deleted" else new).removeprefix("a/").removeprefix("b/")
        hunk = [ln for ln in body[2:] if not ln.startswith("@@ ")]
        out.append(
            FileDiff(
                name,
                "".join(body),
                change,
                sum(1 for ln in hunk if ln.startswith("+")),
                sum(1 for ln in hunk if ln.startswith("-")),
            )
        )
    return out


def ordered(files: list[FileDiff]) -> list[FileDiff]:
    """Edits of files upstream has first (what a reviewer checks), then added and deleted files."""
    return sorted(files, key=lambda f: (f.change != "modified", f.path))


def stat(files: list[FileDiff], width: int) -> str:
    """``git apply --stat``'s summary: a line per file with a bar of ``+`` and ``-``, then the totals."""
    if not files:
        return "no file would change\n"
    files = ordered(files)
    names = [f.path + (" (new)" if f.change == "added" else " (gone)" if f.change == "deleted" else "") for f in files]
    name_w = min(max(len(n) for n in names), max(20, width // 2))
    count_w = len(str(max(f.insertions + f.deletions for f in files)))
    bar_w = max(10, width - name_w - count_w - 6)
    most = max(f.insertions + f.deletions for f in files) or 1
    rows = []
    for name, f in zip(names, files, strict=True):
        shown = name if len(name) <= name_w else "..." + name[-(name_w - 3) :]
        total = f.insertions + f.deletions
        scale = min(1.0, bar_w / most)
        plus = round(f.insertions * scale) if f.insertions else 0
        minus = round(f.deletions * scale) if f.deletions else 0
        plus = max(plus, 1) if f.insertions else 0
        minus = max(minus, 1) if f.deletions else 0
        rows.append(f" {shown:<{name_w}} | {total:>{count_w}} {'+' * plus}{'-' * minus}")
    ins, dels = sum(f.insertions for f in files), sum(f.deletions for f in files)
    summary = f" {len(files)} file{'s' if len(files) != 1 else ''} changed"
    summary += f", {ins} insertion{'s' if ins != 1 else ''}(+)" if ins or not dels else ""
    summary += f", {dels} deletion{'s' if dels != 1 else ''}(-)" if dels else ""
    return "\n".join([*rows, summary]) + "\n"


def show_diff(files: list[FileDiff]) -> None:
    """The whole diff, code edits first; through ``$PAGER`` (else ``less -FRX``) on a terminal."""
    text = "".join(f.text for f in ordered(files))
    if sys.stdout.isatty():
        os.environ.setdefault("LESS", "FRX")  # as git runs less: quit when it fits, keep colours
        click.echo_via_pager(text)
    else:
        click.echo(text, nl=False)
