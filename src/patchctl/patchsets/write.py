"""Writing a plan: all-or-nothing and crash-safe (through :func:`patchctl.fsutil.write_all`),
refusing files with uncommitted changes, and with ``--commit`` as part of the same change."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patchctl import fsutil
from patchctl.errors import CommitRefused, DirtyFiles, PatchFailed
from patchctl.patchsets import record as rec
from patchctl.patchsets.model import Outcome
from patchctl.patchsets.plan import Plan
from patchctl.patchsets.reader import to_bytes


@dataclass(frozen=True)
class Written:
    paths: list[str]
    commit: str | None = None
    branch: str | None = None


def check_can_commit(root: Path, is_git: bool, branch: str) -> None:
    """Everything ``--commit`` needs, asked before a file is written (never after)."""
    # git (subprocess and its helpers) is imported where git is asked: apply --force of a
    # checkout, or apply of a tree that is none, starts no program (issue 39.13)
    from patchctl import git

    if not is_git:
        raise CommitRefused(root, "it is not a git repository", "run `git init` there first, or drop --commit")
    if git.branch_exists(root, branch):
        raise CommitRefused(root, f"branch {branch!r} already exists", "delete it or pass --branch NAME")
    if not git.has_committer(root):
        raise CommitRefused(
            root,
            "git has no identity to commit with",
            'run git config --global user.name "Your Name" and git config --global user.email you@example.com',
        )


def execute(
    plan: Plan,
    *,
    force: bool = False,
    commit_branch: str | None = None,
    message: str = "",
    command: str = "apply",
    leave_conflicts: bool = False,
) -> Written:
    """Write the plan all-or-nothing (refusing dirty files unless ``force``); maybe commit it.

    With ``commit_branch`` the commit is part of the change: when git refuses it (a hook, say),
    the files are put back too, so a retry starts from the same tree. A plan with conflicts is
    refused unless ``leave_conflicts`` (``apply --conflicts=markers``: those got no markers).
    """
    if not plan.ok and not leave_conflicts:
        bad = [r for r in plan.results if isinstance(r.status, Outcome) and r.status.is_failure]
        raise PatchFailed(
            f"{bad[0].patch}: {bad[0].status.value} in {bad[0].path}: {bad[0].reason}; "
            f"nothing was written ({len(bad)} patch(es) failed)"
        )
    root = plan.target.root
    if commit_branch:
        check_can_commit(root, plan.target.is_git, commit_branch)
    changes = {
        p: fsutil.FileChange(p, None if (new := plan.after[p]) is None else to_bytes(new), plan.modes.get(p))
        for p in plan.changed_paths
    }
    record = plan.record
    if plan.record_changed and record is not None:
        for e in record.entries:
            text = plan.after.get(e.path)
            if e.sha256_after is None or e.path in changes:
                e.sha256_after = fsutil.sha256_bytes(to_bytes(text)) if text is not None else None
        content = record.to_bytes() if record.entries else None
        # even with no file to change: a revert that finds every file already back by hand
        # must still drop their entries, or verify keeps saying they were applied
        current = (root / rec.RECORD_PATH).read_bytes() if (root / rec.RECORD_PATH).is_file() else None
        if content != current:
            changes[rec.RECORD_PATH] = fsutil.FileChange(rec.RECORD_PATH, content)
    if not changes:
        return Written([])
    if plan.target.is_git and not force:
        _refuse_dirty(plan, [p for p in changes if p != rec.RECORD_PATH])
    shas: list[str] = []

    def commit() -> None:
        from patchctl import git

        assert commit_branch is not None
        shas.append(git.commit_on_branch(root, commit_branch, sorted(changes), message))

    fsutil.write_all(root, changes, command=command, before_commit=commit if commit_branch else None)
    return Written(sorted(changes), shas[0] if shas else None, commit_branch if shas else None)


def _refuse_dirty(plan: Plan, paths: list[str]) -> None:
    """Files with uncommitted changes may not be overwritten, unless patchctl wrote them itself."""
    from patchctl import git

    dirty = git.dirty(plan.target.root, paths)
    record = rec.load(plan.target.root)
    ours = set()
    if record:
        for e in record.entries:
            f = plan.target.root / e.path
            if e.sha256_after and f.is_file() and fsutil.sha256_file(f) == e.sha256_after:
                ours.add(e.path)
    theirs = [p for p in dirty if p not in ours and plan.before.get(p) is not None]
    if theirs:
        raise DirtyFiles(theirs)
