"""sha256 without importing ``hashlib``.

``hashlib`` asks OpenSSL for every digest it offers as it is imported: some 17M instructions, 4%
of a ``verify --json`` (issue 39.13, measured with callgrind), for the one digest verify uses (the
patchset's hash in the load cache's key, a conflict's key). CPython's own sha256 module gives the
same digests; ``hashlib`` stays the answer where a build has none.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads it as true)
if TYPE_CHECKING:
    from hashlib import sha256
else:
    try:
        from _sha256 import sha256  # CPython 3.10 and 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # CPython 3.12 and later
        except ImportError:
            from hashlib import sha256

__all__ = ["sha256"]
