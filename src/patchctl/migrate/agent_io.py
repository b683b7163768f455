"""What the host agent (``remote_agent``) needs of ``json`` and ``tempfile``, without importing them
where it can: every host program's start-up is CPU on the host, and on a machine whose cores the
hosts share (the loopback bench) wall time as well.

``import json`` brings ``re`` (with enum, functools, collections), ``import tempfile`` brings
shutil and random: together ~7 ms of the agent's ~27 ms start (CPU), for a sealed answer that needs
neither (one order line and the seal read, one line written). ``loads`` and ``quote`` use the C
scanner and encoder json itself runs on; ``dumps`` imports json when a reply or a record is
written, after the answer that counts.

Sent as source first of the agent's files (``verify_remote._agent_b64``), so it needs only
python3 >= 3.6 and its standard library and never imports patchctl.
"""

import os

if False:  # typing only: the host's python3 may predate the typing module
    from collections.abc import Callable  # noqa: F401 - named in type comments only
    from typing import Any, Optional  # noqa: F401 - named in type comments only

_BLANK = " \t\n\r"  # JSON's whitespace


class _Defaults:
    """``json.loads``' settings, as its C scanner reads them off a decoder."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


_scan = None  # type: Optional[Callable[[str, int], tuple[Any, int]]]
_c_quote = None  # type: Optional[Callable[[str], str]]
try:  # CPython's (json.decoder and json.encoder use them when present)
    from _json import encode_basestring_ascii, make_scanner

    _scan = make_scanner(_Defaults)  # type: ignore[arg-type] # json passes its decoder: the settings are read off it
    _c_quote = encode_basestring_ascii
except ImportError:  # another python: json itself, imported when first needed
    pass


def loads(text):
    # type: (str) -> Any
    """``json.loads(text)``: the same document, or json's ValueError for anything that is not one
    (the C scanner reports an error through json.decoder, which it does not import)."""
    if _scan is None:
        import json

        return json.loads(text)
    start, size = 0, len(text)
    while start < size and text[start] in _BLANK:
        start += 1
    try:
        doc, end = _scan(text, start)
        if end == size or not text[end:].strip(_BLANK):
            return doc
    except (StopIteration, SystemError, ValueError):  # SystemError: its error type is json.decoder's
        pass
    import json  # not one document: json itself says what is wrong (rarely: a damaged file)

    return json.loads(text)


def quote(text):
    # type: (str) -> str
    """``json.dumps(text)`` of a string."""
    if _c_quote is None:
        import json

        return json.dumps(text)
    quoted = _c_quote(text)  # type: str
    return quoted


def dumps(doc, **options):
    # type: (Any, Any) -> str
    """``json.dumps``, imported only now: a reply or a record, written after the sealed answer."""
    import json

    return json.dumps(doc, **options)


def temp_file(folder):
    # type: (str) -> tuple[int, str]
    """A new file in ``folder`` (mode 0600, never one that was there, never through a link), open,
    and its path: ``tempfile.mkstemp``'s job."""
    for _ in range(100):
        path = os.path.join(folder, ".patchctl-" + os.urandom(8).hex())
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {folder}")
