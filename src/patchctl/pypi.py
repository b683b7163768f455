"""Source releases from the package index, fetched with the standard library alone.

patchctl used to run ``python -m pip download``; in a venv without pip (uv's default) every
``verl==X.Y.Z`` then failed as "no such source release" while the cause was ``No module named
pip`` (#19). The index's JSON Simple API (PEP 691) names each file with its sha256, so urllib
is enough, and the archive is checked against that digest before it enters the cache.

Everything the index sends is untrusted (#41): the page is read up to :data:`PAGE_CAP` and any
shape of JSON is answered with a one-line error; the archive is read up to the size the index
lists (PEP 700), never beyond :data:`ARCHIVE_CAP`; :mod:`patchctl.fetch` holds the deadline,
the http(s)-only rule and the credentials.

``$PATCHCTL_INDEX_URL`` points at another index or mirror (default ``https://pypi.org/simple``),
``user:token@`` included for a private one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from patchctl.errors import ReleaseDownloadFailed, ReleaseHashMismatch, UnknownRelease
from patchctl.fetch import Session, split_credentials

DEFAULT_INDEX = "https://pypi.org/simple"
#: PEP 691: ask for JSON; an index that only speaks HTML is reported, not parsed
ACCEPT = "application/vnd.pypi.simple.v1+json"
#: the most bytes of an index page read (verl's whole history is 15 kB on PyPI in 2025)
PAGE_CAP = 8 << 20
#: the most bytes of a source archive read (verl's are 1-2 MB), whatever size the index lists
ARCHIVE_CAP = 256 << 20
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Listing:
    """One file as the index lists it."""

    #: the file's name, a plain name (checked)
    filename: str
    #: absolute URL, joined to the page's
    url: str
    #: lower-case hex
    sha256: str
    #: bytes, when the index says (PEP 700's ``size``); None otherwise
    size: int | None


def index_url() -> str:
    return (os.environ.get("PATCHCTL_INDEX_URL") or DEFAULT_INDEX).rstrip("/") + "/"


def _read_page(session: Session, page: str) -> Any:
    body = b"".join(session.chunks(page, PAGE_CAP, accept=ACCEPT))
    try:
        return json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than Python's stack
        raise ReleaseDownloadFailed(session.spec, page, "not a JSON Simple API (PEP 691) page") from None


def _listing(spec: str, page: str, entry: dict[str, Any], name: str) -> Listing:
    """The entry of ``name``, each field checked: a listing is the index's word, not ours."""
    url = entry.get("url")
    if not isinstance(url, str) or not url:
        raise ReleaseDownloadFailed(spec, page, f"{name} is listed without a url")
    hashes = entry.get("hashes")
    digest = hashes.get("sha256") if isinstance(hashes, dict) else None
    if not isinstance(digest, str) or not _SHA256.fullmatch(digest.lower()):
        raise ReleaseDownloadFailed(spec, page, f"{name} is listed without a sha256")
    size = entry.get("size")
    if size is not None and (type(size) is not int or size < 0):
        raise ReleaseDownloadFailed(spec, page, f"{name} is listed with a size that is not a byte count: {size!r}")
    # credentials in a listed URL are dropped: the index's own (PATCHCTL_INDEX_URL) go to its host
    return Listing(name, split_credentials(urljoin(page, url))[0], digest.lower(), size)


def find_sdist(session: Session, project: str, version: str) -> Listing:
    """The release's source archive, as the index lists it (a .tar.gz before a .zip)."""
    page = urljoin(session.index.rstrip("/") + "/", f"{project}/")
    document = _read_page(session, page)
    files = document.get("files") if isinstance(document, dict) else None
    if not isinstance(files, list):
        raise ReleaseDownloadFailed(session.spec, page, "not a JSON Simple API (PEP 691) page: no list of files")
    for name in (f"{project}-{version}.tar.gz", f"{project}-{version}.zip"):
        for entry in files:
            if isinstance(entry, dict) and entry.get("filename") == name:
                return _listing(session.spec, page, entry, name)
    raise UnknownRelease(session.spec, f"the index lists no source archive {project}-{version}.tar.gz")


def download(project: str, version: str, into: Path) -> tuple[Path, str]:
    """The release's sdist, written into the folder ``into`` only once its sha256 matched; and that sha256."""
    spec = f"{project}=={version}"
    with Session(spec, index_url()) as session:
        listed = find_sdist(session, project, version)
        name, url = listed.filename, listed.url
        if listed.size is not None and listed.size > ARCHIVE_CAP:
            raise ReleaseDownloadFailed(
                spec, url, f"listed at {listed.size} bytes, over patchctl's cap of {ARCHIVE_CAP}"
            )
        part = into / (name + ".part")
        sha = hashlib.sha256()
        with open(part, "wb") as out:
            for chunk in session.chunks(url, listed.size if listed.size is not None else ARCHIVE_CAP):
                sha.update(chunk)
                out.write(chunk)
    if sha.hexdigest() != listed.sha256:
        part.unlink()
        raise ReleaseHashMismatch(spec, url, listed.sha256, sha.hexdigest())
    final = into / name
    os.replace(part, final)
    return final, listed.sha256
