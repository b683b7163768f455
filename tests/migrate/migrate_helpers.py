"""Helpers shared by the migrate tests and the benchmark: small git repositories."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def git(root: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=env).stdout


def migrate_argv(tree: Path, config: Path, *args: str) -> list[str]:
    """``patchctl migrate loop`` as a child process of its own: the tests that signal it or give
    it a terminal cannot run it inside pytest's process through click's runner."""
    return [
        sys.executable,
        "-c",
        "from patchctl.cli.main import main; main()",
        "migrate",
        "loop",
        "--target",
        str(tree),
        "--config",
        str(config),
        *args,
    ]


def make_repo(root: Path, files: dict[str, str], *, untracked: dict[str, str] | None = None) -> Path:
    """A git repository with ``files`` committed and ``untracked`` written afterwards."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    for rel, text in (untracked or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


GITIGNORE_CASES = {
    # anchoring: a pattern with a slash in the middle is relative to the .gitignore in git; rsync
    # matches it at any depth (so rsync would also drop x/doc/frotz)
    ".gitignore": "doc/frotz\n/build\n*.tmp\n!keep.tmp\n*.log\n",
    "doc/frotz": "ignored by git\n",
    "x/doc/frotz": "sent: git anchors doc/frotz at the top\n",
    "build/out.txt": "ignored (anchored /build)\n",
    "sub/build/out.txt": "sent: /build only matches at the top\n",
    # negation: git re-includes keep.tmp; in an rsync exclude file "!" clears the list instead
    "a.tmp": "ignored\n",
    "keep.tmp": "sent: negated\n",
    # nested .gitignore: only applies below its directory
    "sub/.gitignore": "*.dat\n",
    "sub/x.dat": "ignored by sub/.gitignore\n",
    "top.dat": "sent: sub/.gitignore does not reach here\n",
    "plain.py": "print('hi')\n",
}
EXPECTED = {
    ".gitignore",
    "sub/.gitignore",
    "plain.py",
    "x/doc/frotz",
    "sub/build/out.txt",
    "keep.tmp",
    "top.dat",
    "forced.log",
}


def make_gitignore_repo(root: Path) -> Path:
    """Files where gitignore semantics and rsync filter rules disagree."""
    committed = {
        ".gitignore": GITIGNORE_CASES[".gitignore"],
        "sub/.gitignore": GITIGNORE_CASES["sub/.gitignore"],
        "plain.py": GITIGNORE_CASES["plain.py"],
    }
    root = make_repo(root, committed, untracked={k: v for k, v in GITIGNORE_CASES.items() if k not in committed})
    (root / "forced.log").write_text("tracked although *.log is ignored\n")
    git(root, "add", "-f", "forced.log")
    git(root, "commit", "-q", "-m", "force-add a log")
    (root / ".git" / "info" / "exclude").write_text("private.txt\n")
    (root / "private.txt").write_text("ignored through .git/info/exclude\n")
    return root
