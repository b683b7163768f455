"""The few git questions patchctl asks, answered by the git CLI."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from patchctl import proc
from patchctl.errors import BranchExists, CommandFailed, CommitFailed, PatchctlError


def toplevel(path: Path) -> Path | None:
    """The work tree root containing ``path``, or None outside a repository (or without git)."""
    try:
        done = proc.run(["git", "-C", str(path), "rev-parse", "--show-toplevel"], check=False)
    except PatchctlError:
        return None
    if done.returncode != 0:
        return None
    return Path(done.stdout.strip())


def is_worktree_root(path: Path) -> bool:
    """Whether ``path`` is the top of a git work tree (not a folder inside one, not outside git)."""
    top = toplevel(path)
    return top is not None and top.resolve() == path.resolve()


def worktree_files(root: Path) -> dict[str, bool]:
    """path -> tracked, for the files git sees: tracked ones plus untracked ones it does not ignore.

    Git's answer, not rsync's or a walk's: gitignore rules (anchoring, negation, nested files)
    are git's to apply. Tracked files deleted from the work tree are still listed.
    """
    out: dict[str, bool] = {}
    for item in _ls_files(root, "-t", "--cached", "--others", "--exclude-standard"):
        if len(item) > 2 and not item.endswith("/"):  # "dir/": an untracked nested repository
            out[item[2:]] = out.get(item[2:], False) or item[0] != "?"
    return out


def head(root: Path) -> str | None:
    done = proc.run(["git", "-C", str(root), "rev-parse", "--verify", "-q", "HEAD"], check=False)
    return done.stdout.strip() or None


def dirty(root: Path, paths: Iterable[str]) -> list[str]:
    """Those of ``paths`` (relative to ``root``) whose content differs from HEAD or the index.

    Untracked files count as dirty too: overwriting them would lose work git cannot restore.
    """
    wanted = sorted(set(paths))
    if not wanted:
        return []
    return sorted(_status_names(status_porcelain(root, *wanted)))


def _status_names(porcelain: str) -> list[str]:
    """The paths of ``git status --porcelain=v1 -z`` output (a rename's new name only)."""
    out: list[str] = []
    entries = porcelain.split("\0")
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if not entry:
            continue
        code, name = entry[:2], entry[3:]
        if code[0] in "RC":
            i += 1  # the rename source follows as its own entry
        out.append(name)
    return out


def _ident(root: Path) -> list[str]:
    """Commit options: the user's identity when git has one, else a neutral patchctl one."""
    opts = ["-c", "commit.gpgsign=false"]
    if not has_identity(root):
        opts += ["-c", "user.name=patchctl", "-c", "user.email=patchctl@localhost"]
    return opts


def init_with_commit(root: Path, message: str) -> str:
    """Make ``root`` a repository whose first commit holds the whole tree; return its sha."""
    proc.run(["git", "-C", str(root), "init", "-q", "-b", "main"])
    ident = _ident(root)
    proc.run(["git", "-C", str(root), "add", "-A"])
    proc.run(["git", "-C", str(root), *ident, "commit", "-q", "-m", message])
    sha = head(root)
    assert sha is not None
    return sha


def branch_exists(root: Path, name: str) -> bool:
    done = proc.run(["git", "-C", str(root), "rev-parse", "--verify", "-q", f"refs/heads/{name}"], check=False)
    return done.returncode == 0


def commit_on_branch(root: Path, branch: str, paths: list[str], message: str) -> str:
    """Create ``branch`` at HEAD, switch to it and commit exactly ``paths``; return the sha.

    When the commit fails (a hook refused it, say) the branch is removed again and the previous
    branch checked out, so the caller can put the files back and leave the repository as it was.
    """
    if branch_exists(root, branch):
        raise BranchExists(root, branch)
    previous = proc.run(["git", "-C", str(root), "symbolic-ref", "-q", "--short", "HEAD"], check=False).stdout.strip()
    proc.run(["git", "-C", str(root), "checkout", "-q", "-b", branch])
    try:
        proc.run(["git", "-C", str(root), "add", "-A", "--", *paths])
        proc.run(["git", "-C", str(root), "-c", "commit.gpgsign=false", "commit", "-q", "-m", message, "--", *paths])
    except BaseException as exc:
        proc.run(["git", "-C", str(root), "reset", "-q", "--", *paths], check=False)
        proc.run(["git", "-C", str(root), "checkout", "-q", previous or "-"], check=False)
        proc.run(["git", "-C", str(root), "branch", "-q", "-D", branch], check=False)
        if isinstance(exc, CommandFailed):
            raise CommitFailed(root, branch, exc.stderr) from None
        raise
    sha = head(root)
    assert sha is not None
    return sha


def has_committer(root: Path) -> bool:
    """Whether git can name an author and committer here (config, environment or host name)."""
    return all(
        proc.run(["git", "-C", str(root), "var", var], check=False).returncode == 0
        for var in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT")
    )


def has_identity(root: Path) -> bool:
    done = proc.run(["git", "-C", str(root), "config", "user.email"], check=False)
    return bool(done.stdout.strip())


def diff_file(root: Path, rel: str) -> str:
    """``git diff HEAD -- rel``: how a file differs from its last commit ("" when it cannot tell)."""
    done = proc.run(["git", "-C", str(root), "diff", "--no-color", "HEAD", "--", rel], check=False)
    return done.stdout if done.returncode == 0 else ""


def commit_of(repo: Path, ref: str) -> str | None:
    """The commit ``ref`` names in ``repo`` (a branch, tag, sha or ``HEAD~2``), None when none."""
    done = proc.run(["git", "-C", str(repo), "rev-parse", "--verify", "-q", f"{ref}^{{commit}}"], check=False)
    return done.stdout.strip() or None if done.returncode == 0 else None


def has_file_at(repo: Path, commit: str, rel: str) -> bool:
    return proc.run(["git", "-C", str(repo), "cat-file", "-e", f"{commit}:{rel}"], check=False).returncode == 0


def archive(repo: Path, commit: str, dest: Path, prefix: str = "") -> Path:
    """Write the tree of ``commit`` as a tar file (the work tree and index are not touched)."""
    proc.run(
        [
            "git",
            "-C",
            str(repo),
            "archive",
            "--format=tar",
            *([f"--prefix={prefix}"] if prefix else []),
            "-o",
            str(dest),
            commit,
        ]
    )
    return dest


def ignored_files(root: Path) -> list[str]:
    """Untracked files git ignores under ``root`` (build outputs, but also a user's ignored edits)."""
    return [n for n in _ls_files(root, "--others", "--ignored", "--exclude-standard") if n]


def _ls_files(root: Path, *options: str) -> list[str]:
    """``git ls-files`` NUL-separated and unquoted, so every name (spaces, line breaks, non-ASCII)
    comes back exactly as it is on disk; the last item is the empty string after the final NUL."""
    done = proc.run(["git", "-C", str(root), "-c", "core.quotePath=false", "ls-files", "-z", *options])
    return done.stdout.split("\0")


def ignore_rules(root: Path, names: list[str]) -> dict[str, str]:
    """Each of ``names`` -> the rule that makes git ignore it, as ``SOURCE:LINE: PATTERN``."""
    if not names:
        return {}
    done = proc.run(
        ["git", "-C", str(root), "check-ignore", "--no-index", "-v", "-z", "--stdin"],
        input="\0".join(names) + "\0",
        check=False,
    )
    fields = done.stdout.split("\0")
    return {
        name: f"{source}:{line}: {pattern}"
        for source, line, pattern, name in zip(fields[0::4], fields[1::4], fields[2::4], fields[3::4], strict=False)
    }


def status_porcelain(root: Path, *paths: str) -> str:
    """``git status --porcelain=v1 -z`` over ``paths`` (all when none), untracked files listed."""
    return proc.run(
        ["git", "-C", str(root), "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *(paths or (".",))]
    ).stdout


def changed(root: Path, untracked: bool = True) -> list[str]:
    """Every path under ``root`` that differs from HEAD (modified, added, untracked not ignored):
    the tree is HEAD plus these, which is what ``migrate`` records as a host's provenance.
    ``untracked=False`` leaves out untracked files (a caller that listed them already spares
    git a second walk of the tree)."""
    if untracked:
        return dirty(root, ["."])
    done = proc.run(["git", "-C", str(root), "status", "--porcelain=v1", "-z", "--untracked-files=no"])
    return sorted(_status_names(done.stdout))
