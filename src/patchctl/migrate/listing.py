"""git's answers about the source tree, asked as soon as the tree is known.

Which files belong (``git ls-files``), which tracked ones differ from HEAD (``git status``) and
HEAD itself are three git processes. Asked one after the other, late in the file set, they
were on the critical path of every migrate (at 100k files ls-files alone takes ~0.3 s). Asked
at once, when the CLI has found the tree, they run on other cores while this one loads the
patchsets, checks the source and reads the hash cache; the file set then waits for answers
that are mostly there already. The questions are :mod:`patchctl.git`'s own, so the answers are
exactly those asked later would be.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from patchctl import git


class Listing:
    """The three questions about ``root``, each on its own thread (each waits on its git process,
    holding no lock). A failure (not a git tree, git missing) is raised by the answer's ``result``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        pool = ThreadPoolExecutor(max_workers=3, thread_name_prefix="git")
        #: path -> tracked, for every file git sees (see git.worktree_files)
        self.files: Future[dict[str, bool]] = pool.submit(git.worktree_files, root)
        #: the tracked files that differ from HEAD (the untracked ones are those ``files`` lists)
        self.changed: Future[list[str]] = pool.submit(git.changed, root, False)
        #: HEAD of the repository ``root`` is in
        self.head: Future[str | None] = pool.submit(git.head, root)
        pool.shutdown(wait=False)  # the threads end with their git process; nobody waits here

    def is_for(self, root: Path) -> bool:
        """Whether these answers are about ``root`` (a caller may have been handed another's)."""
        return self.root == root
