"""Trees for ``bench_forks.py``: each fork, its verl base, the verl versions, and git's 3-way side.

A fork's base is found from its history (the newest verl commit it contains) or, for a fork
committed as one snapshot, as ``capture --base auto`` finds it (:mod:`patchctl.capture.base`):
the verl commit whose files differ from the fork's first commit in the fewest paths, then the
fewest lines (ties broken by the newest commit picked Search-R1's base 7 commits too new, issue
38). Versions are verl's git tags (from the mirror) or source releases (from
patchctl's release cache, which also holds 0.9.1, a release the mirror lacks).

git's side: one scratch repository per fork holds the base and the fork as commits, so
``git apply -3`` finds every base blob; each version's tree is checked out through its own
index and work tree, and the fork's diff applied file by file (one file git cannot place does
not stop the others, as one ``git apply`` of the whole diff would).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from patchctl import git as patchctl_git
from patchctl import releases
from patchctl.capture import base
from patchctl.capture.sources import list_files

GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@invalid",
}


def git(*args: str, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    """git with ``env``; run inside GIT_WORK_TREE when it is set (git reads paths from there)."""
    env = env or {}
    return subprocess.run(
        ["git", *args],
        capture_output=True,
        text=True,
        check=check,
        cwd=env.get("GIT_WORK_TREE"),
        env={**os.environ, **GIT_ENV, **env},
    )


def find_base(fork_git: Path, verl_git: Path) -> tuple[str, str]:
    """(verl commit, how it was found)."""
    known = set(git(f"--git-dir={verl_git}", "rev-list", "--all").stdout.split())
    for rev in git(f"--git-dir={fork_git}", "rev-list", "HEAD").stdout.split():
        if rev in known:
            return rev, "history"
    first = git(f"--git-dir={fork_git}", "rev-list", "--max-parents=0", "HEAD").stdout.split()[0]
    with tempfile.TemporaryDirectory(prefix="forks-base-") as tmp:
        root = patchctl_git.export(fork_git, first, Path(tmp) / "fork")
        found = base.find(verl_git, base.fork_files(root, list_files(root).files))
    best = found.best
    return best.commit, f"capture --base auto: {best.paths} paths, {best.lines} lines differ"


def export(gitdir: Path, rev: str, dest: Path) -> Path:
    if not dest.is_dir():
        tmp = dest.with_name(dest.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        archive = subprocess.run(["git", f"--git-dir={gitdir}", "archive", rev], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
        tmp.rename(dest)
    return dest


def clone(gitdir: Path, dest: Path) -> Path:
    """A checkout of the bare mirror for ``matrix --repo`` (objects shared, no work tree written)."""
    if not (dest / ".git").is_dir():
        shutil.rmtree(dest, ignore_errors=True)
        git("clone", "-q", "--shared", "--no-checkout", str(gitdir), str(dest))
    return dest


def version_tree(version: str, verl_git: Path, work: Path) -> Path:
    """A pristine tree of ``version``: a git tag (``v0.2``) from the mirror, else a release."""
    if version.startswith("v"):
        return export(verl_git, version, work / "versions" / version)
    return releases.materialize(version)


def scratch_repo(base: Path, fork: Path, where: Path) -> Path:
    """A repository with the base (tag ``base``) and the fork (tag ``fork``) as commits: one per
    base (``base`` names its commit), so a base found anew never meets an old repository's hunks."""
    gd = where / f"git-{base.name}"
    if not (gd / "refs" / "tags" / "fork").exists():
        shutil.rmtree(gd, ignore_errors=True)
        git("init", "-q", "--bare", str(gd))
        for tag, tree in (("base", base), ("fork", fork)):
            env = {"GIT_DIR": str(gd), "GIT_WORK_TREE": str(tree), "GIT_INDEX_FILE": str(where / f"{tag}.index")}
            Path(env["GIT_INDEX_FILE"]).unlink(missing_ok=True)
            git("add", "-A", "-f", ".", env=env)
            parent = ["-p", "base"] if tag == "fork" else []
            sha = git(
                "commit-tree", git("write-tree", env=env).stdout.strip(), *parent, "-m", tag, env=env
            ).stdout.strip()
            git("tag", "-f", tag, sha, env={"GIT_DIR": str(gd)})
    return gd


def read(path: Path) -> str | None:
    """A file as patchctl's reader carries it: bytes that are not UTF-8 as surrogate escapes."""
    return path.read_bytes().decode("utf-8", "surrogateescape") if path.is_file() else None


def git_three_way(gd: Path, version: Path, dest: Path) -> tuple[dict[str, str | None], dict[str, str | None], int, int]:
    """``git apply -3`` of the fork's diff on a copy of ``version``, file by file.

    Returns, per file the fork changed, the text git left (conflict regions resolved to
    upstream's side, so what git merged cleanly elsewhere in the file still counts; None: no
    file), the text as git wrote it (markers and all), and the count of hunks git merged
    cleanly and with conflicts."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(version, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    env = {"GIT_DIR": str(gd), "GIT_WORK_TREE": str(dest), "GIT_INDEX_FILE": str(dest) + ".index"}
    Path(env["GIT_INDEX_FILE"]).unlink(missing_ok=True)
    git("add", "-A", "-f", ".", env=env)
    names = git("diff", "--name-only", "--no-renames", "base", "fork", env={"GIT_DIR": str(gd)}).stdout.splitlines()
    out: dict[str, str | None] = {}
    raw: dict[str, str | None] = {}
    clean = conflicted = 0
    for rel in names:
        # bytes, not text: text mode would turn a CRLF file's diff into one that no longer applies
        diff = subprocess.run(
            ["git", "diff", "--binary", "--no-renames", "base", "fork", "--", rel],
            capture_output=True,
            check=True,
            env={**os.environ, "GIT_DIR": str(gd)},
        ).stdout
        hunks = diff.count(b"\n@@ ")
        done = subprocess.run(
            ["git", "apply", "-3", "--index", "-"],
            input=diff,
            capture_output=True,
            cwd=dest,
            env={**os.environ, **GIT_ENV, **env},
        )
        path = dest / rel
        text = read(path)
        marks = sum(1 for ln in (text or "").splitlines() if ln.startswith("<<<<<<< "))
        placed = done.returncode == 0 or marks > 0
        conflicted += marks
        clean += max(hunks - marks, 0) if placed else 0
        out[rel] = ours(text) if marks and text is not None else text
        raw[rel] = text
    return out, raw, clean, conflicted


def ours(text: str) -> str:
    """A file git left with conflict markers, each conflict resolved to upstream's side."""
    keep, side = [], "both"
    for ln in text.splitlines(keepends=True):
        if ln.startswith("<<<<<<< "):
            side = "ours"
        elif ln.startswith("||||||| ") and side == "ours":
            side = "base"
        elif ln.rstrip("\n") == "=======" and side in ("ours", "base"):
            side = "theirs"
        elif ln.startswith(">>>>>>> ") and side == "theirs":
            side = "both"
        elif side in ("both", "ours"):
            keep.append(ln)
    return "".join(keep)
