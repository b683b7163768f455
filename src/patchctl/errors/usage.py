"""Conditions of what the user asked for: options, config files, targets, clusters, doctor's log.

Each is said before anything runs; the fix is always to type or write something else.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from patchctl.errors.base import PatchctlError, did_you_mean, looked_in
from patchctl.quoting import printable


class ManifestError(PatchctlError):
    """A patchset manifest (or another TOML document) does not match its schema."""

    def __init__(self, file: Path | str, key: str, problem: str, fix: str, patch: str | None = None) -> None:
        self.file, self.key, self.problem, self.fix, self.patch = str(file), key, problem, fix, patch
        where = f"patch {patch!r}, " if patch else ""
        super().__init__(f"{self.file}: {where}key {key!r}: {problem}; {fix}")


class ConfigProblems(PatchctlError):
    """Every problem of one config file at once: a user fixing a config one error per run, as the
    first bad key stopped the check, needed as many runs as it had mistakes (issue 39). Each
    problem is a :class:`ManifestError` of its own, shown on a line of its own."""

    fix = "fix each problem listed, then run again"

    def __init__(self, file: Path | str, problems: list[ManifestError]) -> None:
        self.file, self.problems = str(file), problems
        # each part escaped here: the only line breaks of the message are the list's own
        super().__init__(
            f"{printable(self.file)}: {len(problems)} problems; fix each, then run again:\n"
            + "\n".join(f"  - {printable(p.key)}: {printable(p.problem)}; {printable(p.fix or '')}" for p in problems)
        )


class NoSuchPath(PatchctlError):
    def __init__(self, option: str, path: Path | str) -> None:
        self.option, self.path = option, str(path)
        super().__init__(f"{option} {path}: no such file or directory; check the path")


class BadOptionValue(PatchctlError):
    """A command-line value patchctl cannot use; the message says what to write instead."""

    def __init__(self, option: str, value: str, fix: str) -> None:
        self.option, self.value = option, value
        super().__init__(f"{option} {value}: {fix}")


class MissingOption(PatchctlError):
    def __init__(self, command: str, fix: str) -> None:
        self.command = command
        super().__init__(f"{command}: {fix}")


class BadRef(PatchctlError):
    def __init__(self, option: str, ref: str) -> None:
        self.option, self.ref = option, ref
        super().__init__(f"{option} {ref}: a git ref cannot start with '-'; name a commit, branch or tag")


class UnknownTarget(PatchctlError):
    def __init__(
        self,
        name: str,
        known: list[str],
        config: Path | None,
        searched: Iterable[Path] = (),
        meant: str | None = None,
    ) -> None:
        #: ``config``: the file read; None when there is none, then ``searched`` says where it was sought;
        #: ``meant``: the release spec a near miss such as ``verl=0.6.1`` stands for
        self.name, self.known = name, known
        where = f"in [targets] of {config}" if config else f"in [targets] ({looked_in(searched)})"
        hint = f" (did you mean {meant!r}?)" if meant else did_you_mean(name, known)
        super().__init__(
            f"{name}: not a directory, not a release spec (verl==X.Y.Z) and not a target name {where}{hint}; "
            "pass one of those"
        )


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
