"""A PEP 691 index on 127.0.0.1 that can misbehave, and release archives built in the test.

The server is real (``http.server`` in a thread): patchctl reaches it through
``PATCHCTL_INDEX_URL``, in-process or as a real ``python -m patchctl``. Each path serves a
:class:`Route`, which says how to misbehave: dribble its body or its headers, stall after some
bytes until the test lets it go, want basic auth, or hold every request until two have come.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import ssl
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import patchctl
from realparts import unavailable

#: the sources this test process imports, so that its patchctl processes run the same code (a
#: mutation run's mutated copy, say): not this file's checkout
SRC = Path(patchctl.__file__).resolve().parents[1]


@dataclass
class Route:
    body: bytes
    status: int = 200
    #: seconds before the answer starts (a slow server that is still within any deadline)
    pause: float = 0.0
    #: the Content-Length announced, when not the body's (a server that closes early)
    length: int | None = None
    #: more headers (a redirect's Location)
    headers: dict[str, str] = field(default_factory=dict)
    #: seconds between two bytes of the body (a server sending 1 byte every 2 s)
    dribble: float = 0.0
    #: headers that never end, one byte per ``dribble`` seconds: a header line that grows until the
    #: client leaves (no body byte ever comes)
    dribble_headers: bool = False
    #: send this many bytes of the body, then wait for ``go`` before the rest
    stall_after: int | None = None
    go: threading.Event = field(default_factory=threading.Event)
    #: the Authorization header a request must carry (else 401)
    auth: str | None = None
    #: every request waits here until ``parties`` requests are in (two first uses at once)
    barrier: threading.Barrier | None = None


@dataclass(frozen=True)
class Seen:
    path: str
    authorization: str | None


class _Handler(BaseHTTPRequestHandler):
    index: Index

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        self.index.seen.append(Seen(path, self.headers.get("Authorization")))
        route = self.index.routes.get(path)
        if route is None:
            self.send_error(404)
            return
        if route.barrier is not None:
            route.barrier.wait(timeout=30)
        time.sleep(route.pause)
        if route.auth is not None and self.headers.get("Authorization") != route.auth:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="index"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, ssl.SSLError):  # the client gave up
            self._send(route)

    def _send(self, route: Route) -> None:
        extra = "".join(f"{k}: {v}\r\n" for k, v in route.headers.items())
        length = len(route.body) if route.length is None else route.length
        head = (
            f"HTTP/1.1 {route.status} OK\r\nContent-Type: application/vnd.pypi.simple.v1+json\r\n"
            f"Content-Length: {length}\r\n{extra}Connection: close\r\n\r\n"
        ).encode()
        if route.dribble_headers:
            self._dribble(head[:-2] + b"X-Slow: " + b"a" * 65000, route.dribble)
            return
        self.wfile.write(head)
        self.wfile.flush()
        if route.dribble:
            self._dribble(route.body, route.dribble)
        elif route.stall_after is not None:
            self.wfile.write(route.body[: route.stall_after])
            self.wfile.flush()
            route.go.wait(timeout=60)
            self.wfile.write(route.body[route.stall_after :])
        else:
            self.wfile.write(route.body)

    def _dribble(self, data: bytes, every: float) -> None:
        for i in range(len(data)):
            self.wfile.write(data[i : i + 1])
            self.wfile.flush()
            time.sleep(every)


class Index:
    """The served paths, the requests seen, and what ``publish`` listed so far."""

    def __init__(self, server: ThreadingHTTPServer, scheme: str = "http") -> None:
        self.server = server
        self.routes: dict[str, Route] = {}
        self.seen: list[Seen] = []
        self.entries: list[dict[str, object]] = []
        self.host = f"127.0.0.1:{server.server_address[1]}"
        self.url = f"{scheme}://{self.host}"

    def page(self, body: bytes, **route: object) -> None:
        """Serve ``body`` as verl's project page."""
        self.routes["/simple/verl/"] = Route(body, **route)  # type: ignore[arg-type]

    def publish(self, filename: str, data: bytes, *, sha256: str | None = None, **entry: object) -> Route:
        """List ``filename`` on verl's page (its sha256 and size unless ``entry`` says otherwise) and serve it."""
        listed: dict[str, object] = {
            "filename": filename,
            "url": f"../../files/{filename}",
            "hashes": {"sha256": sha256 or hashlib.sha256(data).hexdigest()},
            "size": len(data),
        }
        listed.update(entry)
        self.entries = [e for e in self.entries if e["filename"] != filename] + [
            {k: v for k, v in listed.items() if v is not None}
        ]
        self.page(json.dumps({"meta": {"api-version": "1.1"}, "name": "verl", "files": self.entries}).encode())
        route = Route(data)
        self.routes[f"/files/{filename}"] = route
        return route

    def requests_for(self, filename: str) -> int:
        return sum(1 for s in self.seen if s.path == f"/files/{filename}")


def _serve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tls: ssl.SSLContext | None = None) -> Iterator[Index]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    idx = Index(server, "https" if tls is not None else "http")
    _Handler.index = idx
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    monkeypatch.setenv("PATCHCTL_INDEX_URL", f"{idx.url}/simple")
    monkeypatch.setenv("PATCHCTL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATCHCTL_PROGRESS_DELAY", "0")
    try:
        yield idx
    finally:
        for route in idx.routes.values():
            route.go.set()
        server.shutdown()
        server.server_close()


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Index]:
    """The index, as ``PATCHCTL_INDEX_URL``, and a fresh ``PATCHCTL_CACHE`` (processes the test starts inherit both)."""
    yield from _serve(tmp_path, monkeypatch)


@pytest.fixture(scope="session")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, made by the openssl command."""
    if shutil.which("openssl") is None:
        unavailable("openssl not found: apt-get install -y openssl")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def tls_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, certificate: tuple[Path, Path]) -> Iterator[Index]:
    """The index over HTTPS, its certificate the one this process and its children trust (SSL_CERT_FILE)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    yield from _serve(tmp_path, monkeypatch, context)


def member(
    name: str, data: bytes = b"", *, kind: bytes = tarfile.REGTYPE, link: str = "", mode: int = 0o644
) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, mode
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data


def tar_gz(*members: tuple[tarfile.TarInfo, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return out.getvalue()


def release(
    version: str, *extra: tuple[tarfile.TarInfo, bytes], pkg_info: str | None = None, declared: str | None = None
) -> bytes:
    """A verl sdist: PKG-INFO, ``verl/__init__.py``, ``verl/version/version``, and ``extra``."""
    top = f"verl-{version}"
    return tar_gz(
        member(top, kind=tarfile.DIRTYPE, mode=0o755),
        member(f"{top}/PKG-INFO", f"Metadata-Version: 2.1\nName: verl\nVersion: {pkg_info or version}\n\n".encode()),
        member(f"{top}/verl/__init__.py", b"__version__ = '" + version.encode() + b"'\n"),
        member(f"{top}/verl/version/version", f"{declared or version}\n".encode()),
        *extra,
    )


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def patchctl_process(*args: str) -> subprocess.Popen[str]:
    """A real ``python -m patchctl`` on this checkout's sources, with the test's environment."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.Popen(
        [sys.executable, "-m", "patchctl", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def patchctl(*args: str, timeout: float = 120) -> Ran:
    proc = patchctl_process(*args)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"patchctl {' '.join(args)} still ran after {timeout} s: {err[-500:]}")
    return Ran(proc.returncode, out, err)
