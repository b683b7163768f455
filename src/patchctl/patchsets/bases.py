"""The base text of each file a patchset edits in place: what its 3-way fallback merges from.

A patch carries only its own anchors and texts. When upstream rewrote the code around them, the
anchors lead nowhere and the patch has nothing else to go by, where ``git apply -3`` still merges
from the base blob (issue 38 req 7). So ``patchctl capture`` keeps, beside the manifest, the
BASE text of every file an in-place patch edits:

- ``bases/index.toml``: ``[files]`` maps each file (relative to the tree) to the sha256 of its text;
- ``bases/<sha256>``: that text, once per distinct text.

A patchset is untrusted input (it comes from a fork, an archive, a colleague): :func:`load`
reads the index with size caps, takes only plain relative paths and 64-hex names, reads each
text from a regular file (never through a link) of at most :data:`MAX_BYTES`, and checks its
sha256. Anything else is a :class:`~patchctl.errors.ManifestError` naming the file, before any
patch is planned. A patchset without ``bases/`` (one captured before, or written by hand) loads
as before: its patches simply have no fallback.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from patchctl.errors import ManifestError
from patchctl.sha import sha256

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FOLDER = "bases"
INDEX = "index.toml"
#: largest base text kept (verl's largest Python file is ~0.1 MB)
MAX_BYTES = 4 * 1024 * 1024
#: largest index, and most files it may name
MAX_INDEX = 1024 * 1024
MAX_FILES = 5000
_SHA = re.compile(r"[0-9a-f]{64}")

_cache: dict[tuple[str, int, int], Mapping[str, str]] = {}


def write(where: Path, texts: Mapping[str, bytes]) -> None:
    """Write ``texts`` (file -> BASE bytes) under ``where/bases``: sorted, one blob per distinct
    text, so that capturing the same fork twice writes the same bytes."""
    if not texts:
        return
    folder = where / FOLDER
    folder.mkdir()
    names = {rel: sha256(data).hexdigest() for rel, data in texts.items()}
    for rel in sorted(texts):
        blob = folder / names[rel]
        if not blob.exists():
            blob.write_bytes(texts[rel])
    lines = [
        "# BASE's text of each file the patchset edits in place (patchctl capture): the 3-way",
        "# fallback merges a patch from it when the patch's anchors lead nowhere. sha256 -> bases/<sha256>.",
        "[files]",
        *(f"{_quote(rel)} = {_quote(names[rel])}" for rel in sorted(texts)),
    ]
    (folder / INDEX).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def load(root: Path) -> Mapping[str, str]:
    """File -> BASE text for the patchset at ``root`` (empty without ``bases/``); cached per index state."""
    index = root / FOLDER / INDEX
    try:
        st = os.lstat(index)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ManifestError(
            index, "(file)", f"cannot be read ({exc.strerror})", "restore it or capture again"
        ) from None
    key = (str(root.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _cache:
        _cache.clear()  # one patchset at a time in practice; never grow without bound
        _cache[key] = _read(index, st)
    return _cache[key]


def _bad(file: Path, key: str, problem: str) -> ManifestError:
    return ManifestError(file, key, problem, "capture the fork again, or remove the bases folder to do without")


def _read(index: Path, st: os.stat_result) -> Mapping[str, str]:
    if not stat.S_ISREG(st.st_mode):
        raise _bad(index, "(file)", "is not a regular file")
    if st.st_size > MAX_INDEX:
        raise _bad(index, "(file)", f"is {st.st_size} bytes, more than {MAX_INDEX}")
    try:
        doc = tomllib.loads(index.read_bytes().decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise _bad(index, "(document)", f"not valid TOML ({exc})") from None
    files = doc.get("files", {})
    if not isinstance(files, dict) or set(doc) - {"files"}:
        raise _bad(index, "files", "must be the one table, of file = sha256")
    if len(files) > MAX_FILES:
        raise _bad(index, "files", f"names {len(files)} files, more than {MAX_FILES}")
    out: dict[str, str] = {}
    texts: dict[str, str] = {}
    for rel, sha in files.items():
        if not _plain(rel):
            raise _bad(index, f"files.{rel}", "is not a plain relative path inside the tree")
        if not isinstance(sha, str) or not _SHA.fullmatch(sha):
            raise _bad(index, f"files.{rel}", "is not a sha256 (64 lowercase hex digits)")
        if sha not in texts:
            texts[sha] = _blob(index, rel, index.parent / sha, sha)
        out[rel] = texts[sha]
    return out


def _plain(rel: object) -> bool:
    if not isinstance(rel, str) or not rel or "\\" in rel or "\0" in rel or rel.startswith("/"):
        return False
    parts = PurePosixPath(rel).parts
    return all(p not in ("", ".", "..") for p in parts) and parts[0] != ".git"


def _blob(index: Path, rel: str, path: Path, sha: str) -> str:
    try:
        st = os.lstat(path)
    except OSError:
        raise _bad(index, f"files.{rel}", f"names bases/{sha[:12]}…, which is missing") from None
    if not stat.S_ISREG(st.st_mode):
        raise _bad(index, f"files.{rel}", f"names bases/{sha[:12]}…, which is not a regular file")
    if st.st_size > MAX_BYTES:
        raise _bad(index, f"files.{rel}", f"names bases/{sha[:12]}…, {st.st_size} bytes, more than {MAX_BYTES}")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if sha256(data).hexdigest() != sha:
        raise _bad(index, f"files.{rel}", f"bases/{sha[:12]}… does not hold the text its name's sha256 says")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _bad(index, f"files.{rel}", f"bases/{sha[:12]}… is not UTF-8 text") from None
