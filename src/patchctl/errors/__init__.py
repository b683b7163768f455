"""The one root of user-facing errors, and one subclass per condition.

Every message names the thing at fault (file, patch, host, key) and the next step, because
the CLI prints it as a single line with no traceback.

The classes live in one module per area (``base``, ``usage``, ``sources``, ``system``,
``changes``, ``train``) so that each stays small; import them from here, as ``from
patchctl.errors import X``, so that a class can move between areas without touching its users.
"""

from __future__ import annotations

from patchctl.errors.base import PatchctlError, did_you_mean, looked_in
from patchctl.errors.changes import (
    BranchExists,
    ChangePending,
    CommitFailed,
    CommitRefused,
    ConflictsPending,
    ConflictStateDamaged,
    ConflictUnresolved,
    DirtyFiles,
    JournalDamaged,
    JournalUnsafe,
    NoPatchset,
    PatchFailed,
    PatchsetGivenTwice,
    PatchsetNotGiven,
    UnknownPatch,
)
from patchctl.errors.sources import (
    ArchiveRefused,
    ArchiveTooLarge,
    BadArchive,
    NotAVerlTree,
    NotUtf8,
    OutsideTree,
    ReleaseArchiveRefused,
    ReleaseDownloadFailed,
    ReleaseHashMismatch,
    SourceSyntaxError,
    UnknownRelease,
    UnsafeArchive,
)
from patchctl.errors.system import CommandFailed, FileSystemFailed, ToolMissing, WriteFailed
from patchctl.errors.train import (
    GpuInUse,
    PlaceholderMissing,
    RequiredPathMissing,
    SettingsMissing,
    TokenizersMissing,
    UnknownProfile,
)
from patchctl.errors.usage import (
    BadOptionValue,
    BadRef,
    LogUnreadable,
    ManifestError,
    MissingOption,
    NoClusterConfig,
    NoLogGiven,
    NoSuchPath,
    UnknownCluster,
    UnknownTarget,
)

__all__ = [
    "ArchiveRefused",
    "ArchiveTooLarge",
    "BadArchive",
    "BadOptionValue",
    "BadRef",
    "BranchExists",
    "ChangePending",
    "CommandFailed",
    "CommitFailed",
    "CommitRefused",
    "ConflictStateDamaged",
    "ConflictUnresolved",
    "ConflictsPending",
    "DirtyFiles",
    "FileSystemFailed",
    "GpuInUse",
    "JournalDamaged",
    "JournalUnsafe",
    "LogUnreadable",
    "ManifestError",
    "MissingOption",
    "NoClusterConfig",
    "NoLogGiven",
    "NoPatchset",
    "NoSuchPath",
    "NotAVerlTree",
    "NotUtf8",
    "OutsideTree",
    "PatchFailed",
    "PatchctlError",
    "PatchsetGivenTwice",
    "PatchsetNotGiven",
    "PlaceholderMissing",
    "ReleaseArchiveRefused",
    "ReleaseDownloadFailed",
    "ReleaseHashMismatch",
    "RequiredPathMissing",
    "SettingsMissing",
    "SourceSyntaxError",
    "TokenizersMissing",
    "ToolMissing",
    "UnknownCluster",
    "UnknownPatch",
    "UnknownProfile",
    "UnknownRelease",
    "UnknownTarget",
    "UnsafeArchive",
    "WriteFailed",
    "did_you_mean",
    "looked_in",
]
