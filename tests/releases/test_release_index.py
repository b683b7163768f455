"""What the index sends is untrusted: pages, listings, archives and the cache, against a real
local index (release_index) that misbehaves in each way issue 41 lists."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import shutil
import socket
import threading
import zipfile
from pathlib import Path

import pytest
from tests.clirun import run
from tests.releases.release_index import Index, Route, member, patchctl, release, tar_gz

from patchctl import pypi, releases
from patchctl.errors import ReleaseArchiveRefused, ReleaseDownloadFailed, UnknownRelease


def refused(*args: str) -> str:
    """The one-line error of a patchctl run that could not run as asked (exit 2)."""
    code, out = run(*args)
    assert code == 2, out
    assert out.startswith("error: ") and out.count("\n") == 1, out
    return out


def test_a_release_downloads_once_and_is_reused(index: Index) -> None:
    index.publish("verl-9.1.0.tar.gz", release("9.1.0"))
    first = releases.sdist("9.1.0")
    assert releases.sdist("9.1.0") == first and index.requests_for("verl-9.1.0.tar.gz") == 1
    assert [s.authorization for s in index.seen] == [None, None]  # no credentials: no Authorization
    assert [t for t in threading.enumerate() if isinstance(t, threading.Timer)] == []  # the deadline's watchdog ended
    recorded = (first.parent / "verl-9.1.0.tar.gz.sha256").read_text().strip()
    assert recorded == hashlib.sha256(first.read_bytes()).hexdigest()
    releases.materialize("9.1.0")
    first.unlink()  # the tree, once made, is reused without its archive
    assert releases.materialize("9.1.0").joinpath("verl", "__init__.py").is_file()
    assert index.requests_for("verl-9.1.0.tar.gz") == 1


@pytest.mark.parametrize("damage", ["truncated", "flipped", "no-record"])
def test_a_damaged_cached_archive_is_fetched_again(index: Index, damage: str) -> None:
    data = release("9.1.1")
    index.publish("verl-9.1.1.tar.gz", data)
    cached = releases.sdist("9.1.1")
    if damage == "truncated":
        cached.write_bytes(data[: len(data) // 2])
    elif damage == "flipped":
        cached.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    else:
        (cached.parent / (cached.name + ".sha256")).unlink()
    assert releases.sdist("9.1.1").read_bytes() == data
    assert index.requests_for("verl-9.1.1.tar.gz") == 2
    assert releases.materialize("9.1.1").joinpath("verl", "__init__.py").is_file()


def test_a_damaged_cached_archive_is_not_kept_when_the_refetch_fails(index: Index) -> None:
    index.publish("verl-9.1.2.tar.gz", release("9.1.2"))
    cached = releases.sdist("9.1.2")
    cached.write_bytes(b"cut")
    del index.routes["/files/verl-9.1.2.tar.gz"]
    with pytest.raises(UnknownRelease, match=r"verl-9\.1\.2\.tar\.gz answered 404"):
        releases.sdist("9.1.2")
    assert list(cached.parent.iterdir()) == []


def test_a_listing_url_that_is_not_http_is_refused(index: Index) -> None:
    index.publish("verl-9.2.0.tar.gz", b"x", url="file:///dev/zero")
    out = refused("verify", "--target", "verl==9.2.0")
    assert "verl==9.2.0: could not download from file:///dev/zero (not an http(s) URL" in out


def test_a_redirect_is_followed_over_http_only(index: Index) -> None:
    route = index.publish("verl-9.2.1.tar.gz", release("9.2.1"))
    index.routes["/moved/verl-9.2.1.tar.gz"] = route
    index.routes["/files/verl-9.2.1.tar.gz"] = Route(b"", 302, headers={"Location": "/moved/verl-9.2.1.tar.gz"})
    assert releases.sdist("9.2.1").is_file()
    index.publish("verl-9.2.2.tar.gz", b"x")
    index.routes["/files/verl-9.2.2.tar.gz"] = Route(b"", 302, headers={"Location": "file:///dev/zero"})
    out = refused("verify", "--target", "verl==9.2.2")
    assert f"could not download from {index.url}/files/verl-9.2.2.tar.gz (HTTP 302" in out


def test_a_body_larger_than_listed_is_cut_off(index: Index) -> None:
    data = release("9.3.0")
    index.publish("verl-9.3.0.tar.gz", data + bytes(5 << 20), size=len(data))
    out = refused("verify", "--target", "verl==9.3.0")
    assert f"(larger than the {len(data)} bytes expected: stopped)" in out
    assert list((releases.cache_dir() / "releases").iterdir()) == []


def test_a_listed_size_over_the_cap_is_refused_without_downloading(index: Index) -> None:
    """The cap is 256 MiB (verl's sdists are 1-2 MB); a size of exactly 256 MiB is downloaded."""
    index.publish("verl-9.3.1.tar.gz", b"x", size=(256 << 20) + 1)
    out = refused("verify", "--target", "verl==9.3.1")
    assert "(listed at 268435457 bytes, over patchctl's cap of 268435456)" in out
    assert index.requests_for("verl-9.3.1.tar.gz") == 0
    index.publish("verl-9.3.1.tar.gz", release("9.3.1"), size=256 << 20)  # the sha256 decides, as ever
    assert releases.sdist("9.3.1").is_file()


def test_a_listed_size_of_zero_is_taken_at_its_word(index: Index) -> None:
    index.publish("verl-9.3.4.tar.gz", b"", size=0)
    out = refused("verify", "--target", "verl==9.3.4")
    assert "verl-9.3.4.tar.gz: is not a readable archive" in out


def test_without_a_listed_size_the_cap_bounds_the_download(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pypi, "ARCHIVE_CAP", 1000)
    index.publish("verl-9.3.2.tar.gz", bytes(1001), size=None)
    with pytest.raises(ReleaseDownloadFailed, match=r"\(larger than the 1000 bytes expected: stopped\)"):
        releases.sdist("9.3.2")
    index.publish("verl-9.3.2.tar.gz", bytes(1000), size=None, sha256=hashlib.sha256(bytes(1000)).hexdigest())
    assert releases.sdist("9.3.2").stat().st_size == 1000


def test_a_body_shorter_than_announced_is_cut_off(index: Index) -> None:
    route = index.publish("verl-9.3.3.tar.gz", b"x" * 50, size=None)
    route.length = 100  # the server announces 100 bytes and closes after 50
    with pytest.raises(ReleaseDownloadFailed, match=r"\(cut off after 50 bytes, 50 more were announced\)"):
        releases.sdist("9.3.3")


def test_a_page_over_its_cap_is_refused(index: Index) -> None:
    """8 MiB are read (verl's page is 15 kB); one byte more is refused."""
    index.page(b" " * ((8 << 20) - 1) + b"{}")
    out = refused("verify", "--target", "verl==9.4.0")
    assert "/simple/verl/ (larger than the 8388608 bytes expected: stopped)" in out
    index.page(b" " * ((8 << 20) - 2) + b"{}")
    out = refused("verify", "--target", "verl==9.4.0")
    assert "/simple/verl/ (not a JSON Simple API (PEP 691) page: no list of files)" in out


@pytest.mark.parametrize(
    ("page", "problem"),
    [
        (b"[" * 100_000 + b"]" * 100_000, r"not a JSON Simple API \(PEP 691\) page\)"),
        (b"<html>PEP 503 only</html>", r"not a JSON Simple API \(PEP 691\) page\)"),
        (b'{"files": {"verl-9.4.1.tar.gz": 1}}', r"not a JSON Simple API \(PEP 691\) page: no list of files"),
        (b"[1, 2]", "no list of files"),
        (json.dumps({"files": ["x", {"filename": "verl-9.4.1.tar.gz"}]}).encode(), "is listed without a url"),
        (json.dumps({"files": [{"filename": "verl-9.4.1.tar.gz", "url": 7}]}).encode(), "is listed without a url"),
        (
            json.dumps({"files": [{"filename": "verl-9.4.1.tar.gz", "url": "a", "hashes": []}]}).encode(),
            "is listed without a sha256",
        ),
        (
            json.dumps(
                {"files": [{"filename": "verl-9.4.1.tar.gz", "url": "a", "hashes": {"sha256": "abc"}}]}
            ).encode(),
            "is listed without a sha256",
        ),
        (
            json.dumps(
                {"files": [{"filename": "verl-9.4.1.tar.gz", "url": "a", "hashes": {"sha256": "a" * 64}, "size": "9"}]}
            ).encode(),
            r"is listed with a size that is not a byte count: '9'",
        ),
        (
            json.dumps(
                {"files": [{"filename": "verl-9.4.1.tar.gz", "url": "a", "hashes": {"sha256": "a" * 64}, "size": -1}]}
            ).encode(),
            "is listed with a size that is not a byte count: -1",
        ),
        (
            json.dumps(
                {"files": [{"filename": "verl-9.4.1.tar.gz", "url": "a", "hashes": {"sha256": "a" * 64}, "size": True}]}
            ).encode(),
            "is listed with a size that is not a byte count: True",
        ),
    ],
    ids=[
        "nested-100000",
        "html",
        "files-not-a-list",
        "not-an-object",
        "no-url",
        "url-not-text",
        "hashes-not-a-dict",
        "sha256-not-hex",
        "size-text",
        "size-negative",
        "size-bool",
    ],
)
def test_a_page_of_any_shape_gives_a_one_line_error(index: Index, page: bytes, problem: str) -> None:
    index.page(page)
    out = refused("verify", "--target", "verl==9.4.1")
    assert f"verl==9.4.1: could not download from {index.url}/simple/verl/ (" in out
    assert re.search(problem, out), out


def test_a_zip_is_taken_when_the_index_has_no_tar(index: Index) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("verl-9.4.2/PKG-INFO", "Metadata-Version: 2.1\nName: verl\nVersion: 9.4.2\n\n")
        zf.writestr("verl-9.4.2/verl/__init__.py", "")
    index.publish("verl-9.4.2.zip", out.getvalue())
    index.publish("verl-9.4.20.tar.gz", release("9.4.20"))
    assert releases.sdist("9.4.2").name == "verl-9.4.2.zip"
    assert (releases.materialize("9.4.2") / "verl" / "__init__.py").is_file()
    assert (releases.materialize("9.4.20") / "verl" / "__init__.py").is_file()


@pytest.mark.parametrize(
    ("archive", "problem"),
    [
        (release("9.5.0", pkg_info="9.4.9"), "holds verl 9.4.9 by its PKG-INFO, not 9.5.0"),
        (release("9.5.0", declared="0.6.1"), "holds verl '0.6.1' by verl/version/version, not 9.5.0"),
        (release("9.5.0", pkg_info="not a version"), "holds verl not a version by its PKG-INFO, not 9.5.0"),
    ],
    ids=["pkg-info", "version-file", "pkg-info-garbage"],
)
def test_an_archive_of_another_version_is_refused_and_removed(index: Index, archive: bytes, problem: str) -> None:
    index.publish("verl-9.5.0.tar.gz", archive)
    out = refused("verify", "--target", "verl==9.5.0")
    assert f"verl==9.5.0: {releases.cache_dir()}/releases/verl-9.5.0.tar.gz: {problem}; the archive was removed" in out
    assert sorted(p.name for p in (releases.cache_dir() / "releases").iterdir()) == []
    assert [p.name for p in (releases.cache_dir() / "trees").iterdir()] == []


def test_the_version_is_compared_as_pip_compares_it(index: Index, tmp_path: Path) -> None:
    """9.5.1.0 is 9.5.1; a PKG-INFO's description may say anything after the headers' blank line."""
    top = "verl-9.5.1"
    data = tar_gz(
        member(f"{top}/PKG-INFO", b"Name: verl\nSummary: x\nVersion: 9.5.1.0\n\nVersion: 1.0\n"),
        member(f"{top}/verl/__init__.py"),
    )
    index.publish("verl-9.5.1.tar.gz", data)
    assert (releases.pristine("9.5.1", tmp_path / "p") / "verl" / "__init__.py").is_file()
    index.publish("verl-9.5.2.tar.gz", tar_gz(member("verl-9.5.2/verl/__init__.py")))
    with pytest.raises(ReleaseArchiveRefused, match=r"holds verl \(no version\) by its PKG-INFO, not 9.5.2"):
        releases.pristine("9.5.2", tmp_path / "q")
    data = tar_gz(
        member("verl-9.5.3/PKG-INFO", b"Name: verl\n\nVersion: 9.5.3\n"), member("verl-9.5.3/verl/__init__.py")
    )
    index.publish("verl-9.5.3.tar.gz", data)
    with pytest.raises(ReleaseArchiveRefused, match=r"holds verl \(no version\) by its PKG-INFO"):
        releases.pristine("9.5.3", tmp_path / "r")
    assert list((tmp_path / "r").iterdir()) == []


def test_a_corrupt_archive_the_index_vouches_for_is_refused_and_removed(index: Index) -> None:
    data = release("9.5.4")
    index.publish("verl-9.5.4.tar.gz", data[: len(data) // 2])  # listed with the sha256 of these very bytes
    out = refused("verify", "--target", "verl==9.5.4")
    assert "verl-9.5.4.tar.gz: is corrupt or truncated" in out and "the archive was removed from the cache" in out
    assert list((releases.cache_dir() / "releases").iterdir()) == []


def basic(user: str, token: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()


def test_an_index_url_with_credentials_uses_basic_auth_and_never_shows_the_token(
    index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "s3cr%40t-token"  # percent-encoded in the URL, as pip reads it: s3cr@t-token
    monkeypatch.setenv("PATCHCTL_INDEX_URL", f"http://alice:{token}@{index.host}/simple")
    index.publish("verl-9.6.0.tar.gz", release("9.6.0"))
    index.routes["/simple/verl/"].auth = basic("alice", "s3cr@t-token")
    index.routes["/files/verl-9.6.0.tar.gz"].auth = basic("alice", "s3cr@t-token")
    code, out = run("verify", "--target", "verl==9.6.0")
    assert code == 1 and "verify: FAILED" in out  # it ran: the patches are missing from this tiny tree
    assert [s.authorization for s in index.seen] == [basic("alice", "s3cr@t-token")] * 2

    monkeypatch.setenv("PATCHCTL_INDEX_URL", f"http://alice:wrong-{token}@{index.host}/simple")
    out = refused("verify", "--target", "verl==9.6.1")
    assert f"could not download from {index.url}/simple/verl/ (HTTP 401" in out
    assert "s3cr" not in out and "alice" not in out


def test_credentials_go_to_the_index_host_alone(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file listed on another host (localhost is not 127.0.0.1 to a browser or to pip) gets no token."""
    monkeypatch.setenv("PATCHCTL_INDEX_URL", f"http://alice:tok@{index.host}/simple")
    port = index.host.rsplit(":", 1)[1]
    index.publish(
        "verl-9.6.2.tar.gz", release("9.6.2"), url=f"http://bob:listed@localhost:{port}/files/verl-9.6.2.tar.gz"
    )
    assert releases.sdist("9.6.2").is_file()
    assert [s.authorization for s in index.seen] == [basic("alice", "tok"), None]


@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan", "inf"])
def test_a_bad_deadline_is_named(index: Index, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("PATCHCTL_DOWNLOAD_TIMEOUT", value)
    index.publish("verl-9.7.0.tar.gz", release("9.7.0"))
    out = refused("verify", "--target", "verl==9.7.0")
    assert f"PATCHCTL_DOWNLOAD_TIMEOUT {value}: set it to the seconds a release download may take" in out


@pytest.mark.parametrize("value", [" 30 ", "0.5"])
def test_a_deadline_that_is_a_number_is_taken(index: Index, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """Any positive number of seconds; 0.5 s may not be enough on a loaded machine, but it is a deadline."""
    monkeypatch.setenv("PATCHCTL_DOWNLOAD_TIMEOUT", value)
    index.publish("verl-9.7.1.tar.gz", release("9.7.1"))
    try:
        assert releases.sdist("9.7.1").is_file()
    except ReleaseDownloadFailed as exc:
        assert f"(not done within {value.strip()} s (PATCHCTL_DOWNLOAD_TIMEOUT)" in str(exc)


def test_a_slow_server_within_the_deadline_is_waited_for(index: Index) -> None:
    index.publish("verl-9.7.2.tar.gz", release("9.7.2")).pause = 0.5
    index.routes["/simple/verl/"].pause = 0.5
    assert releases.sdist("9.7.2").is_file()


def test_a_project_the_index_lacks_is_unknown(index: Index) -> None:
    out = refused("verify", "--target", "verl==9.7.3")
    assert f"verl==9.7.3: no such source release could be downloaded ({index.url}/simple/verl/ answered 404)" in out


def test_an_index_that_does_not_answer_is_named(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("PATCHCTL_INDEX_URL", f"http://127.0.0.1:{port}/simple")
    out = refused("verify", "--target", "verl==9.7.4")
    assert f"could not download from http://127.0.0.1:{port}/simple/verl/ ([Errno 111] Connection refused)" in out


def test_an_https_index_with_a_token(tls_index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    """The production path: TLS, its certificate checked, basic auth, and the watchdog on a TLS socket."""
    monkeypatch.setenv("PATCHCTL_INDEX_URL", f"https://alice:tok@{tls_index.host}/simple")
    tls_index.publish("verl-9.8.0.tar.gz", release("9.8.0"))
    tls_index.routes["/simple/verl/"].auth = basic("alice", "tok")
    assert releases.sdist("9.8.0").is_file()
    assert [s.authorization for s in tls_index.seen] == [basic("alice", "tok")] * 2
    monkeypatch.setenv("PATCHCTL_DOWNLOAD_TIMEOUT", "2")
    # a byte every 0.5 s: each read returns well within the socket's timeout, so only the watchdog stops it
    tls_index.routes["/simple/verl/"].dribble, tls_index.routes["/simple/verl/"].dribble_headers = 0.5, True
    ran = patchctl("verify", "--target", "verl==9.8.1", timeout=60)  # a process: a broken watchdog hangs
    assert ran.code == 2 and f"{tls_index.url}/simple/verl/ (not done within 2 s" in ran.err, ran.text


def test_an_https_index_whose_certificate_is_not_trusted_is_refused(
    tls_index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", "/nonexistent")
    tls_index.publish("verl-9.8.2.tar.gz", release("9.8.2"))
    out = refused("verify", "--target", "verl==9.8.2")
    assert "[SSL: CERTIFICATE_VERIFY_FAILED]" in out


def test_cache_dir_falls_back_to_xdg_then_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PATCHCTL_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert releases.cache_dir() == tmp_path / "xdg" / "patchctl"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert releases.cache_dir() == tmp_path / "home" / ".cache" / "patchctl"


def test_each_lone_run_sweeps_what_killed_runs_left(index: Index) -> None:
    index.publish("verl-9.9.0.tar.gz", release("9.9.0"))
    index.publish("verl-9.9.1.tar.gz", release("9.9.1"))
    cache = releases.cache_dir()
    (cache / "releases" / ".part-dead1").mkdir(parents=True)
    (cache / "releases" / ".part-dead1" / "verl-9.9.0.tar.gz.part").write_bytes(b"half")
    releases.sdist("9.9.0")
    (cache / "releases" / ".part-dead2").mkdir()
    (cache / "trees" / ".unpack-dead3" / "verl-9.9.1").mkdir(parents=True)
    releases.materialize("9.9.1")
    releases.materialize("9.9.0")
    assert sorted(p.name for p in (cache / "releases").iterdir()) == [
        "verl-9.9.0.tar.gz",
        "verl-9.9.0.tar.gz.sha256",
        "verl-9.9.1.tar.gz",
        "verl-9.9.1.tar.gz.sha256",
    ]
    assert sorted(p.name for p in (cache / "trees").iterdir()) == ["verl-9.9.0", "verl-9.9.1"]


def test_a_folder_in_the_way_of_the_tree_is_named(index: Index) -> None:
    index.publish("verl-9.9.2.tar.gz", release("9.9.2"))
    in_the_way = releases.cache_dir() / "trees" / "verl-9.9.2"
    (in_the_way / "notes").mkdir(parents=True)
    out = refused("verify", "--target", "verl==9.9.2")
    assert f"error: {in_the_way}: something that is not verl's tree is in the way; move it away or delete it" in out
    assert sorted(p.name for p in in_the_way.iterdir()) == ["notes"]
    shutil.rmtree(in_the_way)
    in_the_way.write_text("a file")
    out = refused("verify", "--target", "verl==9.9.2")
    assert f"error: {in_the_way}: something that is not verl's tree is in the way" in out
