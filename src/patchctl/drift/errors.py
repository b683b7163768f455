"""The errors of drift, bisect, watch and retire: one class per condition, each naming the next step."""

from __future__ import annotations

from pathlib import Path

from patchctl.errors import PatchctlError


class NoSuchPatch(PatchctlError):
    def __init__(self, patch_id: str, known: list[str]) -> None:
        self.patch_id = patch_id
        super().__init__(f"patch {patch_id!r}: no such patch in the loaded patchsets; known ids: {', '.join(known)}")


class NotARepository(PatchctlError):
    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(f"--repo {path}: not a git repository; pass the root of a verl git checkout")


class UnknownRef(PatchctlError):
    def __init__(self, option: str, ref: str, repo: Path) -> None:
        self.option, self.ref, self.repo = option, ref, repo
        super().__init__(
            f"{option} {ref}: no such commit, branch or tag in {repo}; "
            f"list them with `git -C {repo} tag` and `git -C {repo} branch -a`"
        )


class Unjudgeable(PatchctlError):
    """An end of the bisection whose own outcome cannot be told (a file that does not parse)."""

    def __init__(self, option: str, ref: str, patch_id: str, why: str) -> None:
        self.option, self.ref = option, ref
        super().__init__(
            f"{option} {ref}: patch {patch_id!r} cannot be judged there ({why}); pick a commit whose files parse"
        )


class SameOutcome(PatchctlError):
    def __init__(self, patch_id: str, good: str, bad: str, status: str) -> None:
        self.patch_id, self.status = patch_id, status
        super().__init__(
            f"patch {patch_id!r} is {status} at both --good {good} and --bad {bad}: "
            "nothing to bisect; pass refs where its outcome differs (see `patchctl drift`)"
        )


class NoCommonHistory(PatchctlError):
    def __init__(self, good: str, bad: str) -> None:
        super().__init__(f"--good {good} and --bad {bad} share no history; pass two refs of the same repository")


class ChangedBeforeBranch(PatchctlError):
    """As git bisect's "the merge base is bad": the outcome changed before the branches split."""

    def __init__(self, patch_id: str, good: str, base: str, status: str) -> None:
        super().__init__(
            f"patch {patch_id!r}: --good {good} is not an ancestor of --bad, and their merge base "
            f"{base[:12]} is already {status}: the change is older than the branch point or was "
            f"undone on {good}'s branch; pass a --good on --bad's own line, before {base[:12]}"
        )


class Reversed(PatchctlError):
    def __init__(self, good: str, bad: str) -> None:
        super().__init__(
            f"--bad {bad} is an ancestor of --good {good}: the history runs the other way; "
            "swap --good and --bad (the older outcome is --good)"
        )
