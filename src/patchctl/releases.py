"""verl source releases from the package registry, downloaded once and cached.

``verl==X.Y.Z`` as a target means: the sdist of that release, unpacked into a working tree
under the cache and committed to a fresh git repository, so that apply can be dry-run,
diffed, committed and reverted like any checkout.

The cache holds, per release, the archive and beside it the sha256 the index listed
(``verl-X.tar.gz.sha256``): an archive cut short or damaged on disk no longer matches it and
is fetched again (#41). An archive refused when unpacked (unsafe, too large, another version)
is removed, so that nothing refused is ever read again. Temporary folders (``releases/.part-*``
while downloading, ``trees/.unpack-*`` while unpacking) are made only under a shared lock of
the cache; a run that gets the lock alone sweeps those left by a ``kill -9``.
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from patchctl.errors import ArchiveRefused, FileSystemFailed, ReleaseArchiveRefused
from patchctl.sha import sha256

RELEASE_SPEC = re.compile(r"^verl==(?P<version>\d+(\.\d+)*([a-z]+\d*)?(\.post\d+)?)$")
#: the cached archives' names, in the order they are looked for (the index's order of preference)
SUFFIXES = (".tar.gz", ".zip")
#: the name of the sha256 record beside a cached archive
RECORD = ".sha256"


def cache_dir() -> Path:
    """``$PATCHCTL_CACHE``, else ``$XDG_CACHE_HOME/patchctl``, else ``~/.cache/patchctl``."""
    if os.environ.get("PATCHCTL_CACHE"):
        return Path(os.environ["PATCHCTL_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "patchctl"


def parse_spec(spec: str) -> str | None:
    m = RELEASE_SPEC.match(spec.strip())
    return m.group("version") if m else None


def _sweep(cache: Path) -> None:
    """Remove what runs killed mid-way left: only called while no other run holds the cache."""
    import shutil  # here, as below: shutil loads zlib, bz2 and lzma, which a local checkout never needs

    store, trees = cache / "releases", cache / "trees"
    for entry in store.iterdir():
        if entry.is_dir():  # .part-*, and the tmp* of earlier patchctl; rmtree never follows a link
            shutil.rmtree(entry, ignore_errors=True)
    for entry in trees.glob(".unpack-*") if trees.is_dir() else ():
        shutil.rmtree(entry, ignore_errors=True)


@contextmanager
def _cache_in_use() -> Iterator[Path]:
    """Hold the cache shared while this run has temporary folders in it; yield ``releases/``.

    Whoever gets the lock exclusively is the only run: what temporaries are there belong to
    killed runs, and are swept. Nested uses (materialize's sdist) and threads (matrix's
    downloads) each open their own lock, shared with the others.
    """
    cache = cache_dir()
    store = cache / "releases"
    store.mkdir(parents=True, exist_ok=True)
    fd = os.open(cache / "releases.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # another run is at work: its temporaries are live, and the next lone run sweeps
        else:
            _sweep(cache)
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield store
    finally:
        os.close(fd)


def _intact(archive: Path) -> bool:
    """Whether the cached archive still has the sha256 the index listed when it was fetched."""
    try:
        recorded = (archive.parent / (archive.name + RECORD)).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return False  # cached before records were kept, or the record is gone: nothing says it is whole
    digest = sha256()
    with open(archive, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest() == recorded


def _forget(archive: Path) -> None:
    """Remove an archive and its record from the cache (another run may have done so already)."""
    archive.unlink(missing_ok=True)
    (archive.parent / (archive.name + RECORD)).unlink(missing_ok=True)


def sdist(version: str) -> Path:
    """The cached sdist of ``verl==version``, downloaded from the index on first use (no pip),
    and again when the cached one no longer matches the sha256 recorded beside it."""
    import tempfile  # here, as the rest: a local checkout's commands never download or unpack

    from patchctl import progress, pypi  # here: its urllib, http and ssl cost every command's start-up ~10 ms

    with _cache_in_use() as store:
        for suffix in SUFFIXES:
            cached = store / f"verl-{version}{suffix}"
            if cached.is_file():
                if _intact(cached):
                    return cached
                _forget(cached)
        with (
            tempfile.TemporaryDirectory(dir=store, prefix=".part-") as tmp,
            progress.step(f"downloading verl=={version}"),
        ):
            got, digest = pypi.download("verl", version, Path(tmp))
            record = Path(tmp) / (got.name + RECORD)
            record.write_text(digest + "\n", encoding="ascii")
            # the record first: an archive without one is fetched again, a record without its archive is unused
            os.replace(record, store / record.name)
            final = store / got.name
            os.replace(got, final)
            return final


def _pkg_info_version(top: Path) -> str | None:
    """The ``Version:`` of the sdist's PKG-INFO (its metadata, which pip checks too)."""
    try:
        text = (top / "PKG-INFO").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if not line.strip():
            break  # the headers end at the first empty line; the description follows
        key, _, value = line.partition(":")
        if key.strip().lower() == "version":
            return value.strip()
    return None


def _same_version(found: str | None, asked: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        return found is not None and Version(found) == Version(asked)
    except InvalidVersion:
        return False


def check_version(top: Path, version: str) -> str | None:
    """Why the unpacked tree is not verl ``version`` (pip refuses such an sdist too), or None."""
    found = _pkg_info_version(top)
    if not _same_version(found, version):
        return f"holds verl {found or '(no version)'} by its PKG-INFO, not {version}"
    declared = top / "verl" / "version" / "version"
    if declared.is_file():
        text = declared.read_text(encoding="utf-8", errors="replace").strip()
        if not _same_version(text, version):
            return f"holds verl {text[:40]!r} by verl/version/version, not {version}"
    return None


def _unpack_release(version: str, archive: Path, into: Path) -> Path:
    """The release's tree, unpacked under ``into``; a refused archive leaves the cache."""
    # here, not at the top: tarfile, zipfile, lzma and bz2 cost a command on a local checkout
    # (most of them) start-up time for nothing
    from patchctl import archive as archives

    try:
        top = archives.unpack(archive, into)
    except ArchiveRefused as exc:
        _refuse(version, archive, exc.problem)
    problem = check_version(top, version)
    if problem is None:
        return top
    import shutil

    shutil.rmtree(top)
    _refuse(version, archive, problem)


def _refuse(version: str, archive: Path, problem: str) -> NoReturn:
    _forget(archive)
    raise ReleaseArchiveRefused(f"verl=={version}", archive, problem)


def unpack(archive: Path, into: Path) -> Path:
    """Extract a .tar.gz/.tar/.zip holding one top directory into ``into``; return that directory
    (checked member by member on every Python: see :mod:`patchctl.archive`)."""
    from patchctl import archive as archives

    return archives.unpack(archive, into)


def materialize(version: str) -> Path:
    """A git working tree of the release (reused when it exists); return its root."""
    trees = cache_dir() / "trees"
    final = trees / f"verl-{version}"
    if (final / "verl" / "__init__.py").is_file():
        return final
    import tempfile

    from patchctl import progress

    with _cache_in_use():
        archive = sdist(version)
        trees.mkdir(exist_ok=True)  # beside releases/, which sdist made
        with (
            tempfile.TemporaryDirectory(dir=trees, prefix=".unpack-") as tmp,
            progress.step(f"unpacking {archive.name}"),
        ):
            top = _unpack_release(version, archive, Path(tmp))
            # the archive held no .git (archive drops it): this repository is git init's own
            from patchctl import git  # here: reading a release spec runs no git

            git.init_with_commit(top, f"verl {version} (source release {archive.name})")
            try:
                os.replace(top, final)
            except OSError:  # another run made it first (ENOTEMPTY): theirs is the same release
                if not (final / "verl" / "__init__.py").is_file():
                    raise FileSystemFailed(
                        final,
                        "something that is not verl's tree is in the way",
                        "move it away or delete it, then retry",
                    ) from None
    return final


def pristine(version: str, dest: Path) -> Path:
    """Unpack the release's sdist into the empty directory ``dest``; return the tree's root.

    The materialized tree under ``trees/`` is a user's working copy: ``patchctl apply --target
    verl==X`` patches it in place, so it cannot tell what the release itself holds. The sdist
    can, and reading it writes nothing outside ``dest`` (after a first download).
    """
    from patchctl import progress

    archive = sdist(version)
    with progress.step(f"unpacking {archive.name}"):
        return _unpack_release(version, archive, dest)
