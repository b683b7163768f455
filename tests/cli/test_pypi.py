"""Release download from a PEP 691 index: the sha256 the index lists is checked before the
archive enters the cache. A local index on 127.0.0.1 serves the real 0.6.1 sdist, so the check
is shown passing, and failing on a tampered archive, without the network."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from patchctl import releases
from patchctl.errors import ReleaseDownloadFailed, ReleaseHashMismatch, UnknownRelease


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def sdist_bytes(release_cache: Path) -> bytes:
    """The real verl 0.6.1 sdist, from the release tests' cache."""
    return releases.sdist("0.6.1").read_bytes()


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder served as ``http://127.0.0.1:PORT/``; PATCHCTL_INDEX_URL is its ``simple/``."""
    root = tmp_path / "index"
    (root / "simple" / "verl").mkdir(parents=True)
    (root / "files").mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("PATCHCTL_INDEX_URL", f"http://127.0.0.1:{server.server_address[1]}/simple")
    monkeypatch.setenv("PATCHCTL_CACHE", str(tmp_path / "cache"))
    try:
        yield root
    finally:
        server.shutdown()


def publish(index: Path, archive: bytes, listed_sha: str) -> None:
    (index / "files" / "verl-0.6.1.tar.gz").write_bytes(archive)
    page = {
        "meta": {"api-version": "1.0"},
        "name": "verl",
        "files": [
            {"filename": "verl-0.6.1.tar.gz", "url": "../../files/verl-0.6.1.tar.gz", "hashes": {"sha256": listed_sha}}
        ],
    }
    (index / "simple" / "verl" / "index.html").write_text(json.dumps(page))


def test_the_listed_sha256_lets_the_archive_in(sdist_bytes: bytes, index: Path, tmp_path: Path) -> None:
    data = sdist_bytes
    publish(index, data, hashlib.sha256(data).hexdigest())
    got = releases.sdist("0.6.1")
    assert got == tmp_path / "cache" / "releases" / "verl-0.6.1.tar.gz" and got.read_bytes() == data


def test_a_tampered_archive_is_refused_and_nothing_is_kept(sdist_bytes: bytes, index: Path, tmp_path: Path) -> None:
    data = sdist_bytes
    publish(index, data[:-1] + bytes([data[-1] ^ 1]), hashlib.sha256(data).hexdigest())
    with pytest.raises(
        ReleaseHashMismatch, match=r"verl==0.6.1: http://127.0.0.1:\d+/files/verl-0.6.1.tar.gz has sha256"
    ):
        releases.sdist("0.6.1")
    assert list((tmp_path / "cache" / "releases").iterdir()) == []


def test_a_version_the_index_lacks_is_unknown(index: Path) -> None:
    publish(index, b"x", hashlib.sha256(b"x").hexdigest())
    with pytest.raises(UnknownRelease, match=r"the index lists no source archive verl-0\.0\.99\.tar\.gz"):
        releases.sdist("0.0.99")


def test_an_index_that_is_not_json_is_named(index: Path) -> None:
    (index / "simple" / "verl" / "index.html").write_text("<html>PEP 503 only</html>")
    with pytest.raises(ReleaseDownloadFailed, match=r"not a JSON Simple API \(PEP 691\) page"):
        releases.sdist("0.6.1")
