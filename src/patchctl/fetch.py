"""Bounded HTTP(S) GETs for release downloads: a scheme, a size and a deadline that all hold.

Before issue 41 a listing's ``url`` of ``file:///dev/zero`` was read until the memory limit, and
a server sending 1 byte every 2 s kept a download alive forever (each byte reset the socket
timeout). Here only http and https are ever opened (the opener has no file, ftp or data
handler, and urllib refuses a redirect to any other scheme); a body is read only up to the
size the caller gives; and one deadline covers every GET of a release download: a watchdog
shuts the sockets down when it passes, so a server dribbling its headers stops too.

``PATCHCTL_INDEX_URL`` may carry ``user:token@`` (a private index, as pip reads it): the
credentials go as basic auth to that host and port only, never through a redirect to
another host, and every URL patchctl prints has them removed.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from types import TracebackType
from urllib.parse import unquote, urlsplit, urlunsplit

from patchctl.errors import BadOptionValue, ReleaseDownloadFailed, UnknownRelease

#: seconds one release download (the index page and the archive) may take in all
DEADLINE = 600.0
#: the variable that changes :data:`DEADLINE` (a slow link, or a test's quick refusal)
DEADLINE_VAR = "PATCHCTL_DOWNLOAD_TIMEOUT"
#: seconds without an answer before a connection counts as failed (a proxy that swallows packets)
TIMEOUT = 60.0
#: bytes asked of the socket at a time: read1 returns whatever has come, so the clock is checked often
CHUNK = 1 << 16


def deadline_seconds() -> float:
    """:data:`DEADLINE`, or ``$PATCHCTL_DOWNLOAD_TIMEOUT`` when it is a positive number."""
    raw = os.environ.get(DEADLINE_VAR, "").strip()
    if not raw:
        return DEADLINE
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 0.0
    if not seconds > 0 or seconds == float("inf"):
        raise BadOptionValue(DEADLINE_VAR, raw, "set it to the seconds a release download may take, e.g. 600")
    return seconds


def split_credentials(url: str) -> tuple[str, str | None]:
    """``url`` without its ``user:token@``, and the basic-auth header those make (None without)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, token = userinfo.partition(":")
    pair = f"{unquote(user)}:{unquote(token)}".encode()
    return urlunsplit(parts._replace(netloc=host)), "Basic " + base64.b64encode(pair).decode("ascii")


class _Watchdog:
    """Shuts the sockets of one download down once its deadline passes, wherever a read blocks."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.expired = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def left(self) -> float:
        return self.ends - time.monotonic()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._socks.append(sock)
            if self.expired:
                self._shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._socks:
                self._shut(sock)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        # the plain socket's shutdown: an SSLSocket's own drops its TLS state under the reading thread
        with contextlib.suppress(OSError):  # closed already
            socket.socket.shutdown(sock, socket.SHUT_RDWR)

    def stop(self) -> None:
        self._timer.cancel()
        self._timer.join()  # a cancelled timer ends at once: no watchdog outlives its download


def _opener(dog: _Watchdog) -> urllib.request.OpenerDirector:
    """An opener for http and https alone, whose connections the watchdog can cut."""

    class Http(http.client.HTTPConnection):
        def connect(self) -> None:
            super().connect()
            dog.watch(self.sock)

    class Https(http.client.HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            dog.watch(self.sock)

    class HttpHandler(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(Http, req)

    class HttpsHandler(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(Https, req)

    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(),  # HTTPS_PROXY and NO_PROXY, as urlopen reads them
        urllib.request.UnknownHandler(),
        HttpHandler(),
        HttpsHandler(),
        urllib.request.HTTPDefaultErrorHandler(),
        urllib.request.HTTPRedirectHandler(),
        urllib.request.HTTPErrorProcessor(),
    ):
        opener.add_handler(handler)
    return opener


class Session:
    """The GETs of one release download: one deadline over all of them, and the index's credentials."""

    def __init__(self, spec: str, index: str) -> None:
        self.spec = spec
        #: index URL without credentials: what messages show and URLs are joined to
        self.index, header = split_credentials(index)
        self._auth = {urlsplit(self.index).netloc: header} if header else {}
        self._dog = _Watchdog(deadline_seconds())
        self._opener = _opener(self._dog)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._dog.stop()

    def chunks(self, url: str, limit: int, accept: str | None = None) -> Iterator[bytes]:
        """The body of ``url``, chunk by chunk as it comes.

        Refused: a scheme other than http(s), a body over ``limit`` bytes (read no further), a body
        cut short, and anything past the session's deadline. What the caller does with a chunk
        (write it: a full disk) fails in the caller, never reported as the network's fault.
        """
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("http", "https"):
            raise ReleaseDownloadFailed(
                self.spec, url, "not an http(s) URL: refused, patchctl downloads over HTTP(S) only"
            )
        request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})  # noqa: S310 -- http(s) only
        header = self._auth.get(parts.netloc)
        if header:  # unredirected: a redirect to another host does not take the token along
            request.add_unredirected_header("Authorization", header)
        got, short = 0, None
        try:
            with self._opener.open(request, timeout=max(0.1, min(TIMEOUT, self._dog.left()))) as answer:
                while chunk := answer.read1(CHUNK):
                    got += len(chunk)
                    if got > limit:
                        raise ReleaseDownloadFailed(self.spec, url, f"larger than the {limit} bytes expected: stopped")
                    if self._dog.expired:
                        break
                    yield chunk
                short = answer.length
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise UnknownRelease(self.spec, f"{url} answered 404") from None
            raise ReleaseDownloadFailed(self.spec, url, f"HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            if not self._dog.expired:
                reason = getattr(exc, "reason", None) or exc
                raise ReleaseDownloadFailed(self.spec, url, str(reason)) from None
        if self._dog.expired:
            raise ReleaseDownloadFailed(
                self.spec, url, f"not done within {self._dog.seconds:g} s ({DEADLINE_VAR}); {got} bytes came"
            )
        if short:
            raise ReleaseDownloadFailed(self.spec, url, f"cut off after {got} bytes, {short} more were announced")
