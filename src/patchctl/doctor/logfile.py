"""Reading a log for ``doctor``: compressed logs transparently, binary files refused.

Logs are archived compressed (``train.log.gz``), so gzip, bzip2 and xz are recognised by their
first bytes (not the file name) and decompressed while streaming. A file that is not text (an
executable, a checkpoint, a parquet file) is refused with one line: its strings would otherwise
match signatures by chance (an ELF binary holds glibc's "pthread_create failed") and print raw
bytes on the terminal. Text with a few stray bytes is still read (they decode as U+FFFD).

A line longer than :data:`LINE_HEAD` characters is read as its start and its last :data:`LINE_TAIL`
characters, the middle streamed past: a log without newlines (a dump, a file that is text only at its
start) would otherwise be held whole in memory, and each signature that looks at the line costs its
length. The errors a signature matches sit at a line's start (the message) or its end (a repr's
closing words), not a megabyte into it.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, cast

from patchctl.errors import LogUnreadable, PatchctlError

#: how much of the start is looked at (git looks at 8000 bytes for the same question)
SNIFF = 8192
#: compressed formats read transparently: magic -> (name, opener of a binary stream)
COMPRESSED: dict[bytes, tuple[str, Callable[[IO[bytes]], IO[bytes]]]] = {
    b"\x1f\x8b": ("gzip", lambda f: cast(IO[bytes], gzip.GzipFile(fileobj=f, mode="rb"))),
    b"BZh": ("bzip2", lambda f: bz2.open(f, "rb")),  # noqa: SIM115 - the caller's with-block closes it
    b"\xfd7zXZ\x00": ("xz", lambda f: lzma.open(f, "rb")),  # noqa: SIM115 - as above
}
#: binary formats a log is mistaken for: magic -> what it is
BINARY = {
    b"\x7fELF": "an ELF executable or library",
    b"PK\x03\x04": "a zip archive (a torch checkpoint?)",
    b"PAR1": "a parquet file",
    b"\x93NUMPY": "a numpy array",
    b"\x89PNG": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"(\xb5/\xfd": "zstd-compressed data (decompress it first: zstd -d FILE)",
    b"%PDF": "a PDF document",
    b"\xca\xfe\xba\xbe": "a Mach-O or Java binary",
    b"\xcf\xfa\xed\xfe": "a Mach-O binary",
}
#: bytes that occur in text logs: printable ASCII, UTF-8 and other 8-bit text, tab, newlines, ANSI escapes
_TEXT = bytes(range(0x20, 0x7F)) + bytes(range(0x80, 0x100)) + b"\t\n\r\f\b\x1b"
#: above this share of other bytes at the start, a file is binary (random data has ~10%)
MAX_CONTROL = 0.05
_DAMAGED = (EOFError, OSError, lzma.LZMAError, zlib.error)
#: characters kept of a line's start, and of its end, when it is longer
LINE_HEAD = 1 << 20
LINE_TAIL = 1 << 16


class NotALog(PatchctlError):
    def __init__(self, source: str, what: str) -> None:
        self.source, self.what = source, what
        super().__init__(f"{source}: not a text log ({what}); pass the run's log file (plain, .gz, .bz2 or .xz)")


def kind_of(head: bytes) -> str | None:
    """What binary thing ``head`` (a file's first bytes) is, or None when it reads as text."""
    for magic, what in BINARY.items():
        if head.startswith(magic):
            return what
    if len(head) >= 10 and head[8:10] == b'{"' and int.from_bytes(head[:8], "little") < 100_000_000:
        return "a safetensors file"
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "a Python pickle"
    control = len(head.translate(None, _TEXT))
    if head and control / len(head) > MAX_CONTROL:
        return "binary data"
    return None


class _Prefixed(io.RawIOBase):
    """``head`` and then the rest of ``rest``: a stream whose start was read to sniff it."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head, self._rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buf: bytearray | memoryview) -> int:  # type: ignore[override] # io.RawIOBase types the buffer more loosely than we read into it
        view = memoryview(buf).cast("B")
        if self._head:
            n = min(len(view), len(self._head))
            view[:n], self._head = self._head[:n], self._head[n:]
            return n
        data = self._rest.read(len(view))
        view[: len(data)] = data
        return len(data)


def _sniffed(stream: IO[bytes]) -> tuple[bytes, IO[bytes]]:
    head = stream.read(SNIFF)
    return head, io.BufferedReader(_Prefixed(head, stream), SNIFF)


class LogReader:
    """The lines of a log, decompressed if it is compressed; refuses what is not text.

    A context manager: leaving it closes the file when the reader opened it (not stdin). After
    iterating, :attr:`damage` says where a compressed log was cut off (the lines before it were
    read), or is None.
    """

    def __init__(self, stream: IO[bytes], source: str, *, close: bool = False) -> None:
        self.source = source
        #: "gzip" etc. when the log was compressed
        self.compression: str | None = None
        self.damage: str | None = None
        self.lines_read = 0
        #: lines longer than LINE_HEAD + LINE_TAIL characters, read as their start and end
        self.lines_cut = 0
        self._raw, self._close = stream, close
        try:
            head, stream = _sniffed(stream)
            for magic, (name, opener) in COMPRESSED.items():
                if head.startswith(magic):
                    self.compression = name
                    try:
                        head, stream = _sniffed(opener(stream))
                    except _DAMAGED as exc:
                        raise NotALog(source, f"{name} data that cannot be decompressed: {exc}") from None
                    break
            what = kind_of(head)
            if what:
                raise NotALog(source, f"{what}, {self.compression}-compressed" if self.compression else what)
        except BaseException:
            self.close()
            raise
        self._text = io.TextIOWrapper(stream, encoding="utf-8", errors="replace", newline=None)

    def __iter__(self) -> Iterator[str]:
        try:
            while line := self._text.readline(LINE_HEAD):
                if len(line) == LINE_HEAD and line[-1] != "\n":
                    line = self._rest_of(line)
                self.lines_read += 1
                yield line
        except _DAMAGED as exc:
            self.damage = (
                f"the {self.compression or 'log'} data is cut off or damaged after line {self.lines_read} ({exc})"
            )

    def _rest_of(self, head: str) -> str:
        """The long line that starts with ``head``: ``head``, a note of what was skipped, its last
        LINE_TAIL characters and newline. The skipped part is read in pieces, never held whole."""
        tail, skipped = "", 0  # tail: at most LINE_TAIL characters and the newline
        while piece := self._text.readline(LINE_HEAD):
            tail += piece
            if len(tail) > LINE_TAIL + 1:
                skipped += len(tail) - (LINE_TAIL + 1)
                tail = tail[-(LINE_TAIL + 1) :]
            if piece[-1] == "\n":
                break
        if not skipped:
            return head + tail
        self.lines_cut += 1
        return f"{head} [... {skipped} characters not read ...] {tail}"

    def close(self) -> None:
        if self._close:
            self._raw.close()

    def __enter__(self) -> LogReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_log(path: Path) -> LogReader:
    """A reader of the log file at ``path``; a missing or unreadable file is one line."""
    try:
        f = path.open("rb")
    except FileNotFoundError:
        raise LogUnreadable(path, "no such log file") from None
    except IsADirectoryError:
        raise LogUnreadable(path, "is a directory") from None
    except OSError as exc:
        raise LogUnreadable(path, f"cannot be read ({exc.strerror})", "pass the run's log file") from None
    return LogReader(f, str(path), close=True)
