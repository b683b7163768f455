"""Conditions of the verl sources patchctl reads: trees, releases and their archives, files in them.

Each names the tree, release or file at fault, because the user must fix or replace that input.
"""

from __future__ import annotations

from pathlib import Path

from patchctl.errors.base import PatchctlError
from patchctl.quoting import quote_path


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


class ArchiveRefused(PatchctlError):
    """An archive patchctl will not unpack, and why (``problem``): nothing of it was unpacked."""

    def __init__(self, archive: Path | str, problem: str) -> None:
        self.archive, self.problem = str(archive), problem
        super().__init__(f"{archive}: {problem}; nothing was unpacked: delete the archive and retry")


class BadArchive(ArchiveRefused):
    """Not an archive of one top folder: corrupt, truncated, empty, or another layout."""

    def __init__(self, archive: Path | str, problem: str = "unexpected layout (expected one top directory)") -> None:
        super().__init__(archive, problem)


class UnsafeArchive(ArchiveRefused):
    """A member that would land outside the folder it is unpacked into, or is not plain data
    (a device, a FIFO): refused on every Python, whatever its tarfile's filters (#39, #41)."""

    def __init__(self, archive: Path | str, member: str, problem: str = "would be written outside the folder") -> None:
        self.member = member
        super().__init__(archive, f"member {member!r} {problem}")


class ArchiveTooLarge(ArchiveRefused):
    """More members or more bytes than a source release ever holds: refused from its headers,
    before the member that crosses the cap is written (a 1 MiB archive can hold 1 GiB of zeros)."""


class ReleaseArchiveRefused(PatchctlError):
    """The index's archive of a release was refused (unsafe, too large, corrupt, another version):
    it is removed from the cache, so the next run fetches it again rather than failing the same way."""

    def __init__(self, spec: str, archive: Path | str, problem: str) -> None:
        self.spec, self.archive, self.problem = spec, str(archive), problem
        super().__init__(
            f"{spec}: {archive}: {problem}; the archive was removed from the cache and nothing was unpacked: "
            "report the archive to the index's owner, or point PATCHCTL_INDEX_URL at another index"
        )


class SourceSyntaxError(PatchctlError):
    def __init__(self, path: Path | str, line: int, message: str) -> None:
        self.path, self.line = str(path), line
        super().__init__(
            f"{quote_path(path)}:{line}: not valid Python ({message}); fix the file or restore it with git checkout"
        )


class NotUtf8(PatchctlError):
    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        super().__init__(f"{quote_path(path)}: not UTF-8 text; patchctl only patches text files")


class OutsideTree(PatchctlError):
    """A path would lead out of the tree (absolute, ``..`` or a symlink); nothing is touched there."""

    def __init__(self, root: Path | str, rel: str, problem: str, patch: str | None = None) -> None:
        self.root, self.rel, self.problem, self.patch = str(root), rel, problem, patch
        who = f"patch {patch!r}: " if patch else ""
        super().__init__(
            f"{root}: {who}refusing to touch {rel!r}: it {problem}; patchctl only changes files inside the tree"
        )
