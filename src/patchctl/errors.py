"""The one root of user-facing errors, and one subclass per condition.

Every message names the thing at fault (file, patch, host, key) and the next step, because
the CLI prints it as a single line with no traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

from patchctl.quoting import quote_path


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``" (did you mean 'gpu'?)"`` for the closest of ``known`` to a mistyped ``name``, else ``""``."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def looked_in(paths: Iterable[Path | str]) -> str:
    """``"no config file (looked for ./patchctl.toml, ...)"``: a missing config says where it was sought."""
    return "no config file (looked for " + ", ".join(str(Path(p).absolute()) for p in paths) + ")"


class PatchctlError(Exception):
    """An expected failure that the CLI turns into one line (or, with ``--json``, one object).

    Its exit code is 2, "could not run as asked": a check that ran and failed is 1, and scripts
    must be able to tell the two apart (#19). ``fix`` is what to do, where a subclass knows it.
    """

    #: the process's exit code (see ``patchctl --help``)
    exit_code = 2
    #: the next step, as ``--json`` errors give it in ``hint``; None: the message's last clause
    fix: str | None = None


class ManifestError(PatchctlError):
    """A patchset manifest (or another TOML document) does not match its schema."""

    def __init__(self, file: Path | str, key: str, problem: str, fix: str, patch: str | None = None) -> None:
        self.file, self.key, self.problem, self.fix, self.patch = str(file), key, problem, fix, patch
        where = f"patch {patch!r}, " if patch else ""
        super().__init__(f"{self.file}: {where}key {key!r}: {problem}; {fix}")


class NotAVerlTree(PatchctlError):
    def __init__(self, path: Path, upward: bool = False) -> None:
        #: ``upward``: the folders above were searched too, as git searches for ``.git``
        self.path = path
        where = " there or in any folder above" if upward else ""
        super().__init__(
            f"{path}: not a verl tree (no verl/__init__.py{where}); "
            "pass --target with a verl checkout, a release such as verl==0.6.1, or a configured name"
        )


class UnknownRelease(PatchctlError):
    def __init__(self, spec: str, detail: str) -> None:
        self.spec = spec
        super().__init__(
            f"{spec}: no such source release could be downloaded ({detail}); "
            "check the version on https://pypi.org/project/verl/#history"
        )


class ReleaseDownloadFailed(PatchctlError):
    """The package index could not be read: the network, a proxy, or an index of another kind."""

    def __init__(self, spec: str, url: str, problem: str) -> None:
        self.spec, self.url, self.problem = spec, url, problem
        super().__init__(
            f"{spec}: could not download from {url} ({problem}); check the network or proxy "
            "(HTTPS_PROXY), or point PATCHCTL_INDEX_URL at a PEP 691 index you can reach"
        )


class ReleaseHashMismatch(PatchctlError):
    """The archive downloaded is not the one the index lists: nothing of it is kept."""

    def __init__(self, spec: str, url: str, expected: str, got: str) -> None:
        self.spec, self.url = spec, url
        super().__init__(
            f"{spec}: {url} has sha256 {got[:16]}..., the index lists {expected[:16]}...; "
            "nothing was kept: retry, and check for a proxy rewriting downloads"
        )


class NoSuchPath(PatchctlError):
    def __init__(self, option: str, path: Path | str) -> None:
        self.option, self.path = option, str(path)
        super().__init__(f"{option} {path}: no such file or directory; check the path")


class UnknownTarget(PatchctlError):
    def __init__(self, name: str, known: list[str], config: Path | None, searched: Iterable[Path] = ()) -> None:
        #: ``config``: the file read; None when there is none, then ``searched`` says where it was sought
        self.name, self.known = name, known
        where = f"in [targets] of {config}" if config else f"in [targets] ({looked_in(searched)})"
        super().__init__(
            f"{name}: not a directory, not a release spec (verl==X.Y.Z) and not a target name "
            f"{where}{did_you_mean(name, known)}; pass one of those"
        )


class SourceSyntaxError(PatchctlError):
    def __init__(self, path: Path | str, line: int, message: str) -> None:
        self.path, self.line = str(path), line
        super().__init__(
            f"{quote_path(path)}:{line}: not valid Python ({message}); fix the file or restore it with git checkout"
        )


class DirtyFiles(PatchctlError):
    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        shown = ", ".join(quote_path(p) for p in paths[:5]) + (" ..." if len(paths) > 5 else "")
        super().__init__(
            f"uncommitted changes in files a patch would change: {shown}; commit or stash them, or pass --force"
        )


class WriteFailed(PatchctlError):
    """A journaled write stopped and was rolled back; ``fix`` fits the cause (see oserrors.describe)."""

    def __init__(self, path: Path | str, reason: str, fix: str) -> None:
        self.path, self.reason = str(path), reason
        super().__init__(f"{quote_path(path)}: cannot write ({reason}); nothing was changed — {fix}")


class FileSystemFailed(PatchctlError):
    """An ``OSError`` the machine is to blame for (full disk, size limit, permissions), outside a
    journaled write; worded by oserrors.describe."""

    def __init__(self, path: Path | str, cause: str, fix: str) -> None:
        self.path, self.cause = str(path), cause
        super().__init__(f"{quote_path(path)}: {cause}; {fix}")


class PatchFailed(PatchctlError):
    """Apply or revert stopped because a patch ended in conflict/ambiguous; nothing was written."""

    def __init__(self, summary: str) -> None:
        super().__init__(summary)


class OutsideTree(PatchctlError):
    """A path would lead out of the tree (absolute, ``..`` or a symlink); nothing is touched there."""

    def __init__(self, root: Path | str, rel: str, problem: str, patch: str | None = None) -> None:
        self.root, self.rel, self.problem, self.patch = str(root), rel, problem, patch
        who = f"patch {patch!r}: " if patch else ""
        super().__init__(
            f"{root}: {who}refusing to touch {rel!r}: it {problem}; patchctl only changes files inside the tree"
        )


class NotUtf8(PatchctlError):
    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        super().__init__(f"{quote_path(path)}: not UTF-8 text; patchctl only patches text files")


class PatchsetNotGiven(PatchctlError):
    """The apply record names a patchset the command was not given, so revert cannot undo it."""

    def __init__(self, root: Path | str, patchset: str) -> None:
        self.root, self.patchset = str(root), patchset
        super().__init__(
            f"{root}: the apply record lists patchset {patchset!r}; pass it with --patchset DIR to revert it"
        )


class LogUnreadable(PatchctlError):
    """``doctor`` was pointed at something that is not a readable log file."""

    def __init__(
        self, path: Path | str, problem: str, fix: str = "pass the run's log file, or - to read stdin"
    ) -> None:
        self.path, self.problem = str(path), problem
        super().__init__(f"{path}: {problem}; {fix}")


class NoLogGiven(PatchctlError):
    def __init__(self) -> None:
        super().__init__("doctor: no log given; pass the run's log file, or pipe it in (… | patchctl doctor)")


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


class BranchExists(PatchctlError):
    def __init__(self, root: Path | str, branch: str) -> None:
        self.root, self.branch = str(root), branch
        super().__init__(f"{root}: branch {branch!r} already exists; delete it or pass --branch NAME")


class UnknownCluster(PatchctlError):
    def __init__(self, config: Path | str, name: str, known: list[str]) -> None:
        self.config, self.name = str(config), name
        super().__init__(
            f"{config}: no cluster named {name!r}{did_you_mean(name, known)} (known: "
            f"{', '.join(known) or 'none'}); add [clusters.{name}] there"
        )


class NoClusterConfig(PatchctlError):
    """A cluster was named, but there is no config file at all."""

    def __init__(self, name: str, searched: list[Path]) -> None:
        self.name, self.searched = name, searched
        super().__init__(
            f"cluster {name!r}: {looked_in(searched)}; create ./patchctl.toml with [clusters.{name}] "
            "(a complete example: docs/patchctl.toml) or pass --config FILE"
        )


class BadRef(PatchctlError):
    def __init__(self, option: str, ref: str) -> None:
        self.option, self.ref = option, ref
        super().__init__(f"{option} {ref}: a git ref cannot start with '-'; name a commit, branch or tag")


class BadArchive(PatchctlError):
    def __init__(self, archive: Path | str) -> None:
        self.archive = str(archive)
        super().__init__(f"{archive}: unexpected layout (expected one top directory); delete it and retry")


class UnsafeArchive(PatchctlError):
    """A release archive member would land outside the folder it is unpacked into (Python
    < 3.10.12 has no tar ``data`` filter, so patchctl checks the members itself there)."""

    def __init__(self, archive: Path | str, member: str) -> None:
        self.archive, self.member = str(archive), member
        super().__init__(
            f"{archive}: member {member!r} would be written outside the folder, or is a device; "
            "delete the archive and retry"
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


class BadOptionValue(PatchctlError):
    """A command-line value patchctl cannot use; the message says what to write instead."""

    def __init__(self, option: str, value: str, fix: str) -> None:
        self.option, self.value = option, value
        super().__init__(f"{option} {value}: {fix}")


class MissingOption(PatchctlError):
    def __init__(self, command: str, fix: str) -> None:
        self.command = command
        super().__init__(f"{command}: {fix}")


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


class UnknownPatch(PatchctlError):
    def __init__(self, patch_id: str, known: list[str]) -> None:
        self.patch_id = patch_id
        super().__init__(
            f"--only {patch_id}: no such patch in the loaded patchsets{did_you_mean(patch_id, known)}; "
            f"known ids: {', '.join(known)}"
        )


class CommandFailed(PatchctlError):
    """A subprocess exited non-zero; the message shows the command, the code and stderr's tail."""

    def __init__(self, argv: list[str], returncode: int, stderr: str) -> None:
        self.argv, self.returncode, self.stderr = argv, returncode, stderr
        tail = " | ".join(line for line in stderr.strip().splitlines()[-3:])
        super().__init__(f"`{' '.join(argv)}` exited with {returncode}: {tail or 'no output'}")


class ToolMissing(PatchctlError):
    def __init__(self, tool: str, why: str) -> None:
        self.tool = tool
        super().__init__(f"{tool}: not found on PATH; install it ({why})")


class UnknownProfile(PatchctlError):
    """``--profile`` names no ``[profile.NAME]`` table of the training profiles."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name, self.known = name, sorted(known)
        super().__init__(
            f"--profile {name}: no such profile{did_you_mean(name, known)}; choose one of: {', '.join(self.known)}"
        )


class PlaceholderMissing(PatchctlError):
    """A profile's ``{NAME}`` has no value: neither patchctl nor the cluster config gives one."""

    def __init__(self, where: str, name: str) -> None:
        self.where, self.name = where, name
        super().__init__(
            f"{where}: needs {{{name}}}, which neither patchctl nor the cluster config provides; "
            f"add {name} to [clusters.NAME.paths] and pass --cluster NAME"
        )


class SettingsMissing(PatchctlError):
    """A profile needs path settings (MODEL_PATH, DATA_DIR, ...) that no source provides."""

    def __init__(self, profile: str, missing: list[str]) -> None:
        self.profile, self.missing = profile, missing
        super().__init__(
            f"profile {profile} needs {', '.join(missing)}; set them in [clusters.NAME.paths] of "
            "patchctl.toml and pass --cluster NAME, export them, or write them in the tree's "
            "git_ignore.py (patchctl migrate renders it)"
        )


class RequiredPathMissing(PatchctlError):
    """A path a profile requires before the launch does not exist; said before the trainer starts."""

    def __init__(self, path: Path | str, profile: str, used: list[str]) -> None:
        #: ``used``: the settings the path was filled from, each as "MODEL_PATH from cluster lab"
        self.path, self.profile, self.used = str(path), profile, used
        where = f"check {', '.join(used)}" if used else "check MODEL_PATH/DATA_DIR"
        super().__init__(f"{path}: not found (profile {profile} needs it); {where}, or create it")


class TokenizersMissing(PatchctlError):
    """The interpreter building the smoke model lacks the tokenizers package (verl needs it too)."""

    def __init__(self) -> None:
        super().__init__(
            "the smoke profile builds its tokenizer with the tokenizers package, which this "
            "Python lacks; install it (pip install tokenizers; verl needs it anyway)"
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
