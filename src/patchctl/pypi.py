"""Source releases from the package index, fetched with the standard library alone.

patchctl used to run ``python -m pip download``; in a venv without pip (uv's default) every
``verl==X.Y.Z`` then failed as "no such source release" while the cause was ``No module named
pip`` (#19). The index's JSON Simple API (PEP 691) names each file with its sha256, so urllib
is enough, and the archive is checked against that digest before it enters the cache.

``$PATCHCTL_INDEX_URL`` points at another index or mirror (default ``https://pypi.org/simple``).
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from patchctl.errors import ReleaseDownloadFailed, ReleaseHashMismatch, UnknownRelease

DEFAULT_INDEX = "https://pypi.org/simple"
#: PEP 691: ask for JSON; an index that only speaks HTML is reported, not parsed
ACCEPT = "application/vnd.pypi.simple.v1+json"
#: seconds without an answer before a download counts as failed (a proxy that swallows packets)
TIMEOUT = 60


def index_url() -> str:
    return (os.environ.get("PATCHCTL_INDEX_URL") or DEFAULT_INDEX).rstrip("/") + "/"


def _get(url: str, spec: str, accept: str | None = None) -> Any:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})  # noqa: S310 -- see index_url
    try:
        return urllib.request.urlopen(request, timeout=TIMEOUT)  # noqa: S310 -- an https index URL
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise UnknownRelease(spec, f"{url} answered 404") from None
        raise ReleaseDownloadFailed(spec, url, f"HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ReleaseDownloadFailed(spec, url, str(reason)) from None


def find_sdist(project: str, version: str) -> tuple[str, str, str]:
    """``(filename, url, sha256)`` of the release's source archive, as the index lists it."""
    spec = f"{project}=={version}"
    page = urljoin(index_url(), f"{project}/")
    with _get(page, spec, ACCEPT) as answer:
        try:
            files = json.loads(answer.read().decode("utf-8"))["files"]
        except (ValueError, KeyError, TypeError):
            raise ReleaseDownloadFailed(spec, page, "not a JSON Simple API (PEP 691) page") from None
    for name in (f"{project}-{version}.tar.gz", f"{project}-{version}.zip"):
        for f in files:
            if isinstance(f, dict) and f.get("filename") == name:
                digest = (f.get("hashes") or {}).get("sha256")
                if not isinstance(digest, str):
                    raise ReleaseDownloadFailed(spec, page, f"{name} is listed without a sha256")
                return name, urljoin(page, str(f["url"])), digest
    raise UnknownRelease(spec, f"the index lists no source archive {project}-{version}.tar.gz")


def download(project: str, version: str, into: Path) -> Path:
    """The release's sdist, written into the folder ``into`` only once its sha256 matched."""
    spec = f"{project}=={version}"
    name, url, digest = find_sdist(project, version)
    # the file name comes from the index: only ever a plain name inside ``into``
    if Path(name).name != name or name.startswith("."):
        raise ReleaseDownloadFailed(spec, url, f"unsafe file name {name!r}")
    part = into / (name + ".part")
    sha = hashlib.sha256()
    with _get(url, spec) as answer, open(part, "wb") as out:
        try:
            while chunk := answer.read(1 << 16):
                sha.update(chunk)
                out.write(chunk)
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            raise ReleaseDownloadFailed(spec, url, f"cut off: {exc}") from None
    if sha.hexdigest() != digest:
        part.unlink()
        raise ReleaseHashMismatch(spec, url, digest, sha.hexdigest())
    final = into / name
    os.replace(part, final)
    return final
