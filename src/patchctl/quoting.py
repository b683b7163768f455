"""Showing a path the way git does, so a file name cannot forge a line of patchctl's output.

A name may hold any byte but ``/`` and NUL: a file called ``x\\nverify: ok`` printed as it is would
add a line ``verify: ok`` to a failing run. Every human-readable output and message shows paths
through :func:`quote_path`, which quotes them as git does (``core.quotePath=false``): a name with
a control character, a ``"`` or a ``\\`` is put in double quotes with C escapes (``\\n``, ``\\t``,
``\\"``, ``\\\\``, octal ``\\ooo`` for other control bytes and for bytes that are not UTF-8);
any other name, non-ASCII letters included, is shown as it is.
"""

from __future__ import annotations

import os

_NAMED = {
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
    '"': '\\"',
    "\\": "\\\\",
}


def _control(c: str) -> bool:
    n = ord(c)
    # C0 and C1 controls, DEL, and the lone surrogates Python decodes undecodable bytes to
    return n < 0x20 or 0x7F <= n <= 0x9F or 0xDC80 <= n <= 0xDCFF


def _escape(c: str) -> str:
    if c in _NAMED:
        return _NAMED[c]
    if 0xDC80 <= ord(c) <= 0xDCFF:  # a byte os.fsdecode could not decode: show the byte itself
        return f"\\{ord(c) - 0xDC00:03o}"
    return "".join(f"\\{b:03o}" for b in c.encode("utf-8"))


def quote_path(path: str | os.PathLike[str]) -> str:
    """``path`` as git shows it: unchanged when plain, else in double quotes with C escapes."""
    text = os.fspath(path)
    if not any(_control(c) or c in _NAMED for c in text):
        return text
    return '"' + "".join(_escape(c) if _control(c) or c in _NAMED else c for c in text) + '"'


def printable(text: str) -> str:
    """``text`` with its control characters escaped as :func:`quote_path` escapes them, no quotes
    added: for free text that may carry a name (a reason, a message) and must stay one line."""
    return "".join(_escape(c) if _control(c) else c for c in text)
