"""verl source releases from the package registry, downloaded once and cached.

``verl==X.Y.Z`` as a target means: the sdist of that release, unpacked into a working tree
under the cache and committed to a fresh git repository, so that apply can be dry-run,
diffed, committed and reverted like any checkout.
"""

from __future__ import annotations

import os
import re
import shutil
import tarfile
import tempfile
from pathlib import Path

from patchctl import git, progress
from patchctl.errors import BadArchive, UnsafeArchive

RELEASE_SPEC = re.compile(r"^verl==(?P<version>\d+(\.\d+)*([a-z]+\d*)?(\.post\d+)?)$")


def cache_dir() -> Path:
    """``$PATCHCTL_CACHE``, else ``$XDG_CACHE_HOME/patchctl``, else ``~/.cache/patchctl``."""
    if os.environ.get("PATCHCTL_CACHE"):
        return Path(os.environ["PATCHCTL_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "patchctl"


def parse_spec(spec: str) -> str | None:
    m = RELEASE_SPEC.match(spec.strip())
    return m.group("version") if m else None


def sdist(version: str) -> Path:
    """The cached sdist of ``verl==version``, downloaded from the index on first use (no pip)."""
    from patchctl import pypi  # here: its urllib, http and ssl cost every command's start-up ~10 ms

    store = cache_dir() / "releases"
    store.mkdir(parents=True, exist_ok=True)
    for name in (f"verl-{version}.tar.gz", f"verl-{version}.zip"):
        if (store / name).is_file():
            return store / name
    with tempfile.TemporaryDirectory(dir=store) as tmp, progress.step(f"downloading verl=={version}"):
        got = pypi.download("verl", version, Path(tmp))
        final = store / got.name
        os.replace(got, final)
        return final


def unpack(archive: Path, into: Path) -> Path:
    """Extract a .tar.gz/.tar/.zip holding one top directory into ``into``; return that directory.

    Tar members go through the ``data`` filter: an archive may not write outside ``into``.
    """
    if archive.suffix == ".zip":
        shutil.unpack_archive(archive, into)
    else:
        with tarfile.open(archive) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(into, filter="data")
            else:  # Python < 3.10.12 has no filter: the members are checked by hand
                for m in tar.getmembers():
                    names = [m.name, m.linkname] if m.issym() or m.islnk() else [m.name]
                    if m.isdev() or any(n.startswith("/") or ".." in Path(n).parts for n in names):
                        raise UnsafeArchive(archive, m.name)
                tar.extractall(into)  # noqa: S202 - every member was checked just above
    tops = list(into.iterdir())
    if len(tops) != 1 or not tops[0].is_dir():
        raise BadArchive(archive)
    return tops[0]


def materialize(version: str) -> Path:
    """A git working tree of the release (reused when it exists); return its root."""
    trees = cache_dir() / "trees"
    final = trees / f"verl-{version}"
    if (final / "verl" / "__init__.py").is_file():
        return final
    archive = sdist(version)
    trees.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=trees, prefix=".unpack-") as tmp, progress.step(f"unpacking {archive.name}"):
        top = unpack(archive, Path(tmp))
        git.init_with_commit(top, f"verl {version} (source release {archive.name})")
        os.replace(top, final)
    return final


def pristine(version: str, dest: Path) -> Path:
    """Unpack the release's sdist into the empty directory ``dest``; return the tree's root.

    The materialized tree under ``trees/`` is a user's working copy: ``patchctl apply --target
    verl==X`` patches it in place, so it cannot tell what the release itself holds. The sdist
    can, and reading it writes nothing outside ``dest`` (after a first download).
    """
    dest.mkdir(parents=True, exist_ok=True)
    archive = sdist(version)
    with progress.step(f"unpacking {archive.name}"):
        return unpack(archive, dest)
