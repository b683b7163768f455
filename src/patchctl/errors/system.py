"""Conditions the machine is to blame for: a subprocess, a missing tool, the file system.

Apart from the others because their fix is outside patchctl's inputs (install, free space, retry).
"""

from __future__ import annotations

from pathlib import Path

from patchctl.errors.base import PatchctlError
from patchctl.quoting import quote_path


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
