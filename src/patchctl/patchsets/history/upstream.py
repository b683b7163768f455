"""Upstream's history as the walk reads it: blobs, the commits that touch one file, renames.

Everything is cached per upstream commit (issue 38 req 8): a blob by ``commit:path``, the
commits touching a path between two commits, the renames and changed files of one commit, a
commit's subject. One ``git cat-file --batch`` serves every blob, so a walk over hundreds of
commits starts a handful of processes, not one per read. The repository is data: every argv
comes from :func:`patchctl.git.command`, refs come in as full commit ids only, and nothing is
written into it (merges happen on files in a scratch folder of our own).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from patchctl import git
from patchctl.patchsets.history.runner import Runner
from patchctl.patchsets.kinds.text_hunk import shared_ends

#: "(#1234)" at the end of a squash-merged subject, as GitHub writes it
_PR = re.compile(r"\(#(\d+)\)")
_SHA = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Commit:
    """An upstream commit as a reason names it."""

    sha: str
    subject: str

    @property
    def pr(self) -> str | None:
        """The pull request number from the subject ("#1234"), None when it names none."""
        found = _PR.findall(self.subject)
        return f"#{found[-1]}" if found else None

    def __str__(self) -> str:
        pr = f", PR {self.pr}" if self.pr else ""
        return f'{self.sha[:12]} "{self.subject}"{pr}'


@dataclass(frozen=True)
class Merged:
    """``git merge-file`` of one step: the text, and whether it merged without conflict (a
    conflict's text is no merge: the walk stops there and never reads it)."""

    text: str
    clean: bool


class Upstream:
    """A read-only view of ``repo``'s history with a cache; use as a context manager."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._blobs: dict[tuple[str, str], str | None] = {}
        #: end -> start -> (the first-parent line start..end: commit and the paths it changed; commit -> index)
        self._lines: dict[str, dict[str, tuple[list[tuple[str, frozenset[str]]], dict[str, int]]]] = {}
        self._refs: dict[str, str | None] = {}
        self._ancestry: dict[tuple[str, str], bool] = {}
        self._bases: dict[tuple[str, str], str | None] = {}
        self._changes: dict[str, list[tuple[str, str, str]]] = {}
        self._commits: dict[str, Commit] = {}
        self._parents: dict[str, str | None] = {}
        self._merges: dict[tuple[str, str, str], Merged] = {}
        #: the walk's runs of commits, by (commits, state before): :func:`~.walk._blocks` fills it
        self.steps: dict[tuple[tuple[str, ...], object], object] = {}
        self._reader: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._scratch = tempfile.TemporaryDirectory(prefix="patchctl-history-")
        #: the short git commands (merges, log, rev-parse, merge-base), run without forking patchctl
        self._git = Runner()

    def __enter__(self) -> Upstream:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if self._reader is not None:
            self._reader.kill()
            self._reader.wait()
            self._reader = None
        self._git.close()
        self._scratch.cleanup()

    def commit_of(self, ref: str) -> str | None:
        """The commit ``ref`` names; a ref starting with ``-`` is never handed to git."""
        if not ref or ref.startswith("-"):
            return None
        if ref not in self._refs:
            rc, out = self._git.run(self.repo, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False)
            self._refs[ref] = out.decode("utf-8", "surrogateescape").strip() or None if rc == 0 else None
        return self._refs[ref]

    def read(self, sha: str, rel: str) -> str | None:
        """The text of ``rel`` at commit ``sha`` (undecodable bytes as surrogate escapes); None: no such file."""
        key = (sha, rel)
        if key not in self._blobs:
            self._blobs[key] = self._cat(sha, rel)
        return self._blobs[key]

    def _cat(self, sha: str, rel: str) -> str | None:
        if "\n" in rel or not _SHA.fullmatch(sha):  # the batch protocol is one request a line
            return None
        with self._lock:
            if self._reader is None:
                self._reader = git.spawn(self.repo, "cat-file", "--batch", stdin=subprocess.PIPE)
            reader = self._reader
            assert reader.stdin is not None and reader.stdout is not None
            reader.stdin.write(f"{sha}:{rel}\n".encode())
            reader.stdin.flush()
            header = reader.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                return None
            data = reader.stdout.read(int(header[2]))
            reader.stdout.read(1)
        return data.decode("utf-8", "surrogateescape")

    def is_ancestor(self, a: str, b: str) -> bool:
        if (a, b) not in self._ancestry:
            rc, _out = self._git.run(self.repo, "merge-base", "--is-ancestor", a, b, check=False)
            self._ancestry[(a, b)] = rc == 0
        return self._ancestry[(a, b)]

    def merge_base(self, a: str, b: str) -> str | None:
        if (a, b) not in self._bases:
            rc, out = self._git.run(self.repo, "merge-base", a, b, check=False)
            self._bases[(a, b)] = out.decode().strip() or None if rc == 0 else None
        return self._bases[(a, b)]

    def touching(self, start: str, end: str, rel: str) -> list[str]:
        """Commits of ``end``'s first-parent line after ``start`` that change ``rel``, oldest first:
        the steps of the walk (a commit that leaves the file alone cannot move an edit in it)."""
        entries, at = self._line(start, end)
        return [sha for sha, paths in entries[at:] if rel in paths]

    def _line(self, start: str, end: str) -> tuple[list[tuple[str, frozenset[str]]], int]:
        """The first-parent line to ``end`` that ``start`` is on, and where after ``start`` it goes on.

        One ``git log --name-status`` per line, read once: every walk to ``end`` starts at the
        same commit, and its later segments start at commits of that line."""
        for origin, (known, index) in self._lines.get(end, {}).items():
            if start == origin:
                return known, 0
            if start in index:
                return known, index[start] + 1
        _rc, raw = self._git.run(
            self.repo,
            "log",
            "--first-parent",
            "--diff-merges=first-parent",
            "--reverse",
            "-M",
            "--name-status",
            "--format=%x01%H%x02%s",
            f"{start}..{end}",
            "--",
        )
        out = raw.decode("utf-8", "surrogateescape")
        entries: list[tuple[str, frozenset[str]]] = []
        for chunk in out.split("\x01")[1:]:
            head, _, body = chunk.partition("\n")
            sha, _, subject = head.partition("\x02")
            self._commits.setdefault(sha, Commit(sha, subject))
            changes = []
            for line in body.splitlines():
                fields = line.split("\t")
                if len(fields) == 3 and fields[0][:1] in ("R", "C"):
                    changes.append((fields[0][0], fields[1], fields[2]))
                elif len(fields) == 2:
                    changes.append((fields[0][:1], fields[1], fields[1]))
            self._changes.setdefault(sha, changes)
            entries.append((sha, frozenset(p for c in changes for p in c[1:])))
        self._lines.setdefault(end, {})[start] = (entries, {sha: i for i, (sha, _) in enumerate(entries)})
        return entries, 0

    def changes(self, sha: str) -> list[tuple[str, str, str]]:
        """(status letter, old path, new path) of every file ``sha`` changed against its first
        parent, renames detected (``-M``): how a file or a function that left its place is followed."""
        if sha not in self._changes:
            _rc, raw = self._git.run(self.repo, "diff", "--name-status", "-z", "-M", f"{sha}^", sha, "--")
            out = raw.decode("utf-8", "surrogateescape").split("\0")
            found: list[tuple[str, str, str]] = []
            i = 0
            while i < len(out) - 1:
                status = out[i]
                if status[:1] in ("R", "C"):
                    found.append((status[0], out[i + 1], out[i + 2]))
                    i += 3
                else:
                    found.append((status[:1], out[i + 1], out[i + 1]))
                    i += 2
            self._changes[sha] = found
        return self._changes[sha]

    def parent(self, sha: str) -> str | None:
        """``sha``'s first parent, None for a root commit."""
        if sha not in self._parents:
            rc, raw = self._git.run(self.repo, "rev-parse", "--verify", "-q", f"{sha}^1^{{commit}}", check=False)
            found = raw.decode("utf-8", "surrogateescape").strip()
            self._parents[sha] = found if rc == 0 and _SHA.fullmatch(found) else None
        return self._parents[sha]

    def renamed(self, sha: str, rel: str) -> str | None:
        """Where commit ``sha`` renamed ``rel`` to, None when it did not."""
        return next((new for status, old, new in self.changes(sha) if status == "R" and old == rel), None)

    def info(self, sha: str) -> Commit:
        if sha not in self._commits:
            _rc, raw = self._git.run(self.repo, "log", "-1", "--format=%H%x00%s", sha, "--")
            out = raw.decode("utf-8", "surrogateescape")
            full, _, subject = out.rstrip("\n").partition("\0")
            self._commits[sha] = Commit(full, subject)
        return self._commits[sha]

    def merge(self, mine: str, old: str, new: str) -> Merged:
        """``git merge-file``: upstream's change from ``old`` to ``new`` carried into ``mine``."""
        if old == new:
            return Merged(mine, True)
        if mine == old:
            return Merged(new, True)
        key = (mine, old, new)
        if key not in self._merges:
            fast = away(mine, old, new)
            if fast is not None or clash(mine, old, new):
                self._merges[key] = Merged(mine if fast is None else fast, fast is not None)
                return self._merges[key]
            folder = Path(self._scratch.name)
            names = []
            for i, text in enumerate((mine, old, new)):
                path = folder / f"{i}.txt"
                path.write_bytes(text.encode("utf-8", "surrogateescape"))
                names.append(str(path))
            rc, out = self._git.run(folder, "merge-file", "-p", "-q", *names, check=False)
            self._merges[key] = Merged(out.decode("utf-8", "surrogateescape"), rc == 0)
        return self._merges[key]


#: unchanged lines, at least, between the edit and the nearest upstream change for :func:`away`
AROUND = 3


def away(mine: str, old: str, new: str) -> str | None:
    """The 3-way merge done in-process when upstream left the code around the edit alone, else None.

    The edit is the one run of lines where ``mine`` differs from ``old`` (common head and tail cut
    off). Around it, the nearest line each side that occurs exactly once in ``old`` and once in
    ``new`` (at least :data:`AROUND` lines away) is an anchor. When everything from one anchor to
    the other is the same in ``old`` and ``new``, upstream changed nothing there, and
    ``git merge-file`` (which conflicts only on overlapping or adjacent changes) gives ``new`` with
    that stretch taken from ``mine``: the same text without a process and three files per merge
    (issue 38 req 8). Anything else (no anchor, a stretch upstream changed or moved, or one of its
    lines upstream wrote again elsewhere) goes to git."""
    if not (mine.endswith("\n") and old.endswith("\n") and new.endswith("\n")):
        return None
    a, b, c = old.splitlines(keepends=True), mine.splitlines(keepends=True), new.splitlines(keepends=True)
    top, bottom = shared_ends(a, b)
    once_a, once_c = _once(a), _once(c)
    i = next((k for k in range(top - AROUND, -1, -1) if a[k] in once_a and a[k] in once_c), None)
    j = next((k for k in range(len(a) - bottom + AROUND - 1, len(a)) if a[k] in once_a and a[k] in once_c), None)
    if i is None or j is None:
        return None
    ib, jb = once_c[a[i]], once_c[a[j]]
    if jb - ib != j - i or c[ib : jb + 1] != a[i : j + 1]:
        return None
    # upstream moved the stretch: a line found once on both sides lies before it in one and after it
    # in the other; git's diff deletes the stretch at its old place, under the edit
    if any((k < i) != (once_c[ln] < ib) for ln, k in once_a.items() if ln in once_c and not i <= k <= j):
        return None
    # a line of the stretch that upstream wrote again elsewhere (code copied or moved, the old
    # place rewritten) is one git's diff may take for it instead: git decides those
    stretch = set(a[i : j + 1])
    if Counter(ln for ln in a if ln in stretch) != Counter(ln for ln in c if ln in stretch):
        return None
    return "".join(c[:ib] + b[i : len(b) - (len(a) - j)] + c[jb:])


def _once(lines: list[str]) -> dict[str, int]:
    """Each line that occurs once in ``lines``, and its index."""
    seen: dict[str, int] = {}
    for k, ln in enumerate(lines):
        seen[ln] = -1 if ln in seen else k
    return {ln: k for ln, k in seen.items() if k >= 0}


def clash(mine: str, old: str, new: str) -> bool:
    """Whether ``git merge-file`` surely conflicts, told in-process: a line the edit takes out
    (one in ``old`` and nowhere in ``mine``), or for an edit that only inserts, a line it inserts
    next to, is nowhere in ``new``: upstream changed it too, and git conflicts on overlapping or
    adjacent changes. When ``new`` holds any line the edit adds (the same change on both sides
    may merge), git decides.

    Most merges of a walk are of this kind: a block of commits that conflicts is split in halves
    until the one commit that overlaps the edit is found (issue 38 req 8)."""
    a, b = old.splitlines(keepends=True), mine.splitlines(keepends=True)
    top, bottom = shared_ends(a, b)
    have, olds, mines = set(new.splitlines(keepends=True)), set(a), set(b)
    if any(ln in have for ln in b[top : len(b) - bottom] if ln not in olds):
        return False
    if top == len(a) - bottom:  # only inserted: git's diff cannot slide it (top and bottom are longest)
        under = a[max(0, top - 1) : top + 1]
    else:
        under = [ln for ln in a[top : len(a) - bottom] if ln not in mines]
    return any(ln not in have for ln in under)
