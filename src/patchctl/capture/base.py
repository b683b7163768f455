"""``capture --base auto --repo CLONE``: the upstream commit a fork was taken from.

A fork is usually a snapshot: its history, if it has one, starts with a copy of verl, not with
verl's commits. So the base is found by content. Every commit on the first-parent line of each
of CLONE's branches and tags is compared with the fork's files by git's blob ids (no file is
read for that): the fewest paths that differ come first. Commits tied on paths are told apart
by the lines that differ in those paths, added plus removed: a commit a few upstream commits
too new differs in the same files, but carries upstream's later lines there, which the fork
then seems to revert (issue 38: Search-R1's base was picked 7 commits too new when ties went to
the newest commit, and capture emitted 16 patches reverting upstream). A full tie goes to the
older commit: the later one's change is then not in the fork.

One ``git log --raw`` per line of history gives every commit's changes, so the count of
differing paths is kept up to date commit by commit instead of listing each commit's tree.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchctl import git
from patchctl.errors import PatchctlError

#: what ``--base`` says to search ``--repo`` for the fork's base
AUTO = "auto"
#: candidates measured by lines and shown, best first
SHOWN = 5
#: at most this many commits tied on paths are measured by lines (each costs a diff of the tied files)
MEASURED = 40
#: a file this large is counted by its size in lines, not diffed
_DIFF_LIMIT = 1 << 20
_SUBMODULE = "160000"


class NoBaseFound(PatchctlError):
    def __init__(self, repo: Path) -> None:
        super().__init__(
            f"--repo {repo}: holds no commit to compare the fork with; pass a clone of upstream "
            "(git clone https://github.com/volcengine/verl)"
        )


class NotARepository(PatchctlError):
    def __init__(self, repo: Path) -> None:
        super().__init__(
            f"--repo {repo}: not a git clone (a bare repository or a work tree's top folder); "
            "pass a clone of upstream verl (git clone https://github.com/volcengine/verl)"
        )


def repository(repo: Path) -> Path:
    """``repo`` when it is a repository's top (a bare mirror too), else :class:`NotARepository`:
    a folder inside some other checkout is not the clone the user meant."""
    if repo.is_dir():
        bare = git.run(repo, "rev-parse", "--is-bare-repository", check=False).stdout.strip() == "true"
        if bare or git.toplevel(repo) == repo.resolve():
            return repo
    raise NotARepository(repo)


@dataclass(frozen=True)
class Candidate:
    """One upstream commit, and how far the fork is from it."""

    commit: str
    #: committer date, ISO 8601
    date: str
    #: paths whose content differs between the commit and the fork (either side may lack it)
    paths: int
    #: lines added plus removed to turn the commit's files into the fork's; None: not measured
    lines: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.commit, "date": self.date, "paths": self.paths, "lines": self.lines}


@dataclass(frozen=True)
class Found:
    best: Candidate
    #: the best few, measured by lines, best first (``best`` among them)
    shown: tuple[Candidate, ...]
    #: commits compared
    compared: int
    #: the clone searched
    repo: Path

    def to_json(self) -> dict[str, Any]:
        return {
            "repo": str(self.repo),
            "compared": self.compared,
            "best": self.best.commit,
            "candidates": [c.to_json() for c in self.shown],
        }


def blob_id(data: bytes) -> str:
    """git's id of a blob holding ``data`` (SHA-1), as ``git hash-object`` gives it."""
    # git's object id, compared with ids git computed, not a security measure
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def fork_files(root: Path, files: Iterable[str]) -> dict[str, bytes]:
    """The fork's content per path: a symlink's target, as git stores one."""
    out = {}
    for rel in files:
        path = root / rel
        out[rel] = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
    return out


def find(repo: Path, fork: dict[str, bytes]) -> Found:
    """The commit of ``repo`` closest to ``fork`` (path -> bytes): fewest paths, then fewest lines."""
    ids = {rel: blob_id(data) for rel, data in fork.items()}
    found = list(_compare(repository(repo), ids))
    if not found:
        raise NoBaseFound(repo)
    found.sort(key=lambda c: c.paths)
    fewest = found[0].paths
    tied = [c for c in found if c.paths == fewest][:MEASURED]
    others = [c for c in found if c.paths != fewest][: max(SHOWN - len(tied), 0)]
    with _Blobs(repo) as blobs:
        measured = [_measure(c, repo, fork, ids, blobs) for c in tied + others]
    order = {c.commit: i for i, c in enumerate(found)}  # found is oldest first within a line of history
    measured.sort(key=lambda c: (c.paths, c.lines if c.lines is not None else 0, order[c.commit]))
    return Found(measured[0], tuple(measured[:SHOWN]), len(found), repo)


def _compare(repo: Path, fork: dict[str, str]) -> Iterator[Candidate]:
    """Each commit on the first-parent lines of ``repo``'s HEAD, branches and tags (each once,
    oldest first within a line) with the number of paths where it differs from ``fork``."""
    refs = ["HEAD"] + [
        r for r in git.run(repo, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/tags").stdout.split() if r
    ]
    seen: set[str] = set()
    done: list[str] = []
    for ref in refs:
        if git.run(repo, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False).returncode != 0:
            continue  # an empty repository's HEAD, a tag of a tree
        log = git.run(
            repo,
            "log",
            "--first-parent",
            "-m",  # a merge's changes too: with --first-parent, against the line it joins (any git)
            "--reverse",
            "--raw",
            "--root",
            "--no-renames",
            "--no-abbrev",
            "-z",
            "--format=%x01%H %P%x02%cI",
            ref,
            "--not",
            *done,
            "--",
        ).stdout
        done.append(ref)
        tree: dict[str, str] | None = None
        differ = 0
        for commit, parent, date, changes in _parse(log):
            if tree is None:
                tree = _tree(repo, parent) if parent else {}
                differ = sum(1 for p in fork if fork[p] != tree.get(p))
            for rel, sha in changes:
                if rel not in fork:
                    continue  # see the module's note: a file the fork lacks says nothing of its age
                differ -= fork[rel] != tree.get(rel)
                if sha is None:
                    tree.pop(rel, None)
                else:
                    tree[rel] = sha
                differ += fork[rel] != tree.get(rel)
            if commit not in seen:
                seen.add(commit)
                yield Candidate(commit, date, differ)


def _parse(log: str) -> Iterator[tuple[str, str, str, list[tuple[str, str | None]]]]:
    """(commit, first parent, date, [(path, new blob id or None when deleted)]) per commit."""
    for block in log.split("\x01")[1:]:
        head, _, rest = block.partition("\0")
        ids, _, date = head.partition("\x02")
        commit, *parents = ids.split()
        fields = rest.lstrip("\n").split("\0")
        changes: list[tuple[str, str | None]] = []
        for i in range(0, len(fields) - 1, 2):
            meta, rel = fields[i], fields[i + 1]
            if not meta.startswith(":"):
                break
            _old_mode, new_mode, _old, new, status = meta[1:].split()
            if new_mode == _SUBMODULE or _old_mode == _SUBMODULE:
                continue
            changes.append((rel, None if status == "D" else new))
        yield commit, parents[0] if parents else "", date.strip(), changes


def _tree(repo: Path, commit: str) -> dict[str, str]:
    out = git.run(repo, "ls-tree", "-r", "-z", "--full-tree", commit).stdout
    tree = {}
    for entry in out.split("\0"):
        info, _, rel = entry.partition("\t")
        if rel and info.split()[0] != _SUBMODULE:
            tree[rel] = info.split()[2]
    return tree


def _measure(c: Candidate, repo: Path, fork: dict[str, bytes], ids: dict[str, str], blobs: _Blobs) -> Candidate:
    """``c`` with its line count: every path where it differs from the fork, diffed."""
    tree = _tree(repo, c.commit)
    lines = 0
    for rel in fork:
        if ids[rel] != tree.get(rel):
            theirs = blobs.read(tree[rel]) if rel in tree else b""
            lines += changed_lines(theirs, fork.get(rel, b""))
    return Candidate(c.commit, c.date, c.paths, lines)


def changed_lines(a: bytes, b: bytes) -> int:
    """Lines removed from ``a`` plus lines added in ``b`` (a unified diff's - and + lines)."""
    old, new = a.splitlines(), b.splitlines()
    if max(len(a), len(b)) > _DIFF_LIMIT:
        return len(old) + len(new)
    m = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return sum(i2 - i1 + j2 - j1 for op, i1, i2, j1, j2 in m.get_opcodes() if op != "equal")


class _Blobs:
    """Blobs of ``repo`` by id, through one ``git cat-file --batch``; a missing one reads as empty."""

    def __init__(self, repo: Path) -> None:
        self._repo = repo
        self._cache: dict[str, bytes] = {}
        self._reader: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> _Blobs:
        self._reader = git.spawn(self._repo, "cat-file", "--batch", stdin=subprocess.PIPE)
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._reader is not None:
            self._reader.kill()
            self._reader.wait()

    def read(self, sha: str) -> bytes:
        if sha not in self._cache:
            r = self._reader
            assert r is not None and r.stdin is not None and r.stdout is not None
            r.stdin.write(sha.encode() + b"\n")
            r.stdin.flush()
            header = r.stdout.readline().split()
            data = b""
            if len(header) == 3:
                data = r.stdout.read(int(header[2]))
                r.stdout.read(1)
            self._cache[sha] = data
        return self._cache[sha]


def describe(repo: Path, commit: str, declared: str | None = None) -> str:
    """``commit`` as captured_against names it: its id, its date and the nearest releases, e.g.
    ``verl 19840945451e (2025-01-24; v0.1 + 62 commits, before v0.2)``: the newest tag in the
    commit's history and the oldest tag whose history holds it. A version file in the tree is no
    guide: a fork of a commit between releases reads as the last release, or older (issue 38's
    ``verl 0.1``). Only where no tag is near is the version file (``declared``) quoted, as such."""
    date = git.run(repo, "log", "-1", "--format=%cs", commit, "--").stdout.strip()
    described = git.run(repo, "describe", "--tags", "--long", commit, check=False).stdout.strip()
    tag, count = described.rsplit("-", 2)[:2] if described.count("-") >= 2 else ("", "")
    if count == "0":
        return f"verl {commit[:12]} ({date}; {tag})"
    near = [f"{tag} + {count} commits"] if tag else ["no release tag before it"]
    later = git.run(repo, "tag", "--contains", commit, "--sort=creatordate", check=False).stdout.split()
    near += [f"before {later[0]}"] if later else []
    if not tag and not later and declared:
        near.append(f"its version file says {declared}")
    return f"verl {commit[:12]} ({date}; {', '.join(near)})"
