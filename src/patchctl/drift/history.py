"""Reading upstream history from git: commits, first-parent chains and single files.

Bisect and watch look at dozens of commits; a checkout or an archive per commit would cost
seconds each on verl, while ``git cat-file`` of the two or three files a patch reads costs
milliseconds. Every call takes an argv list; refs from the user are resolved with
``rev-parse --verify`` first, so none is ever read as an option.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patchctl import git


@dataclass(frozen=True)
class Commit:
    sha: str
    #: the committer date, ISO 8601
    date: str
    subject: str

    def to_json(self) -> dict[str, str]:
        return {"commit": self.sha, "date": self.date, "subject": self.subject}


def info(repo: Path, sha: str) -> Commit:
    out = git.run(repo, "log", "-1", "--format=%H%x00%cI%x00%s", sha, "--").stdout
    full, date, subject = out.rstrip("\n").split("\0", 2)
    return Commit(full, date, subject)


def is_ancestor(repo: Path, a: str, b: str) -> bool:
    return git.run(repo, "merge-base", "--is-ancestor", a, b, check=False).returncode == 0


def merge_base(repo: Path, a: str, b: str) -> str | None:
    done = git.run(repo, "merge-base", a, b, check=False)
    return done.stdout.strip() or None if done.returncode == 0 else None


def first_parent_chain(repo: Path, good: str, bad: str) -> list[str]:
    """Commits on ``bad``'s first-parent line after ``good``, oldest first, ``bad`` last.

    Merged topic branches count as their merge commit only: that is the commit a fork
    maintainer can name and pin, and it keeps the probes at O(log n) of the mainline.
    """
    out = git.run(repo, "rev-list", "--first-parent", "--reverse", f"{good}..{bad}", "--").stdout
    return out.split()


def recent(repo: Path, ref: str, count: int) -> list[str]:
    """The last ``count`` commits of ``ref``'s first-parent line, oldest first, ``ref`` last."""
    out = git.run(repo, "rev-list", "--first-parent", f"--max-count={count + 1}", ref, "--").stdout
    return list(reversed(out.split()))


def read(repo: Path, sha: str, rel: str) -> bytes | None:
    """The bytes of ``rel`` at ``sha``; None when the commit has no such file (or it is not a blob)."""
    child = git.spawn(repo, "cat-file", "blob", f"{sha}:{rel}")
    out, _ = child.communicate()
    return out if child.returncode == 0 else None


def changed_paths(repo: Path, a: str, b: str, paths: list[str]) -> dict[str, str]:
    """``git diff --name-status -M`` between two commits over ``paths``: new path -> old path for
    renames, path -> path for other changes. Rename detection is what tells a moved file from a
    deleted one."""
    out = git.run(repo, "diff", "--name-status", "-z", "-M", a, b, "--", *paths).stdout.split("\0")
    found: dict[str, str] = {}
    i = 0
    while i < len(out) - 1:
        status = out[i]
        if status.startswith(("R", "C")):
            found[out[i + 2]] = out[i + 1]
            i += 3
        else:
            found[out[i + 1]] = out[i + 1]
            i += 2
    return found
