"""Conditions of ``train`` and ``validate`` before the trainer starts: profiles and their settings.

Said before any GPU time is spent, each naming the profile and where the missing value belongs.
"""

from __future__ import annotations

from pathlib import Path

from patchctl.errors.base import PatchctlError, did_you_mean


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


class GpuInUse(PatchctlError):
    """A GPU the run would use is another live run's (gpulease.py, gpuusers.py): two runs on one
    host load each other's weights or hang in verl's weight sync."""

    def __init__(self, reason: str, fix: str, others: int = 0) -> None:
        self.reason, self.fix = reason, fix
        more = f" (and {others} more)" if others else ""
        super().__init__(f"{reason}{more}; {fix}")
