"""Conditions of a change to a tree: apply, revert, refresh, --commit, the journal and conflicts.

Together because they share one promise: when one is raised, the tree is as it was (or the
message says exactly what is left and how to finish).
"""

from __future__ import annotations

from pathlib import Path

from patchctl.errors.base import PatchctlError, did_you_mean
from patchctl.quoting import quote_path


class DirtyFiles(PatchctlError):
    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        shown = ", ".join(quote_path(p) for p in paths[:5]) + (" ..." if len(paths) > 5 else "")
        super().__init__(
            f"uncommitted changes in files a patch would change: {shown}; commit or stash them, or pass --force"
        )


class PatchFailed(PatchctlError):
    """Apply or revert stopped because a patch ended in conflict/ambiguous; nothing was written."""

    def __init__(self, summary: str) -> None:
        super().__init__(summary)


class PatchsetNotGiven(PatchctlError):
    """The apply record names a patchset the command was not given, so revert cannot undo it."""

    def __init__(self, root: Path | str, patchset: str) -> None:
        self.root, self.patchset = str(root), patchset
        super().__init__(
            f"{root}: the apply record lists patchset {patchset!r}; pass it with --patchset DIR to revert it"
        )


class NoPatchset(PatchctlError):
    """``--patchset`` named a directory without a manifest, or no built-in patchset."""

    def __init__(self, spec: Path | str, builtins: list[str] | None = None) -> None:
        self.spec = str(spec)
        if builtins is None:
            super().__init__(f"{spec}: no patchset.toml there; pass a patchset directory to --patchset")
        else:
            super().__init__(
                f"--patchset {spec}: neither a directory with patchset.toml nor a built-in patchset"
                f"{did_you_mean(str(spec), builtins)} ({', '.join(builtins)})"
            )


class PatchsetGivenTwice(PatchctlError):
    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"patchset {name!r} was given twice; pass each patchset once")


class UnknownPatch(PatchctlError):
    def __init__(self, patch_id: str, known: list[str]) -> None:
        self.patch_id = patch_id
        super().__init__(
            f"--only {patch_id}: no such patch in the loaded patchsets{did_you_mean(patch_id, known)}; "
            f"known ids: {', '.join(known)}"
        )


class BranchExists(PatchctlError):
    def __init__(self, root: Path | str, branch: str) -> None:
        self.root, self.branch = str(root), branch
        super().__init__(f"{root}: branch {branch!r} already exists; delete it or pass --branch NAME")


class CommitRefused(PatchctlError):
    """``--commit`` cannot commit here; said before anything is written."""

    def __init__(self, root: Path | str, problem: str, fix: str) -> None:
        self.root, self.problem = str(root), problem
        super().__init__(f"{root}: --commit refused: {problem}; {fix} (nothing was written)")


class CommitFailed(PatchctlError):
    """git refused the commit (a hook, say) after the files were written; they are put back."""

    def __init__(self, root: Path | str, branch: str, stderr: str) -> None:
        self.root, self.branch = str(root), branch
        tail = " | ".join(line.strip() for line in stderr.strip().splitlines()[-3:]) or "no output"
        super().__init__(
            f"{root}: git refused the commit on branch {branch!r} ({tail}); the files, the branch "
            "and the index are as they were: fix the cause and run the same command again"
        )


class ChangePending(PatchctlError):
    """A journal of an interrupted change is there: it must be recovered before a new change."""

    def __init__(self, root: Path | str) -> None:
        self.root = str(root)
        super().__init__(
            f"{root}: an interrupted patchctl change is pending there; "
            "run `patchctl verify --target` on it first to finish or roll it back"
        )


class JournalDamaged(PatchctlError):
    """The recovery journal cannot be parsed: nothing can be decided from it."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        super().__init__(
            f"{path}: the journal of an interrupted patchctl change is unreadable ({problem}); "
            "compare the tree with git (git status) and remove that folder once it is whole"
        )


class JournalUnsafe(PatchctlError):
    """The recovery journal names what patchctl never writes, or reaches out of the tree.

    Acting on it could delete or move in files anywhere (it is state read back from disk, as
    untrusted as a manifest), so nothing at all is done with it.
    """

    def __init__(self, folder: Path | str, problem: str) -> None:
        self.folder, self.problem = str(folder), problem
        super().__init__(
            f"{folder}: refusing the journal of an interrupted patchctl change: {problem}; "
            "nothing was touched: compare the tree with git (git status), then remove that folder"
        )


class ConflictsPending(PatchctlError):
    """``apply --conflicts=markers`` left conflicts in the tree that nobody has resolved yet."""

    def __init__(self, root: Path | str, conflicts: list[str]) -> None:
        self.root, self.conflicts = str(root), conflicts
        super().__init__(
            f"{root}: {len(conflicts)} conflict(s) written with markers wait for resolution "
            f"({', '.join(conflicts[:3])}{' ...' if len(conflicts) > 3 else ''}); edit them, then run "
            "`patchctl refresh --target T --patchset DIR`, or restore the files with git checkout and "
            "delete .patchctl/conflicts.json"
        )


class ConflictStateDamaged(PatchctlError):
    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = str(path)
        super().__init__(
            f"{path}: the list of conflicts is damaged ({problem}); restore the conflicting files "
            "with git checkout and delete it, then apply again"
        )


class ConflictUnresolved(PatchctlError):
    """``refresh`` found a conflict still marked, or an edit it cannot place."""

    def __init__(self, path: str, patch: str, problem: str) -> None:
        self.path, self.patch = path, patch
        super().__init__(f"{quote_path(path)}: the conflict of patch {patch!r} {problem}; nothing was recorded")
