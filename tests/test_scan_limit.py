"""One rule in two places: files above 4 MiB are data, never read for tags.

``tags.MAX_SCAN`` (the source side: verify, apply, migrate's source check) and
``migrate.agent_cache.MAX_SCAN`` (the host agent, a standalone script that cannot import tags)
must agree, or migrate's check would compare a source inventory that counts a big tagged file
with a host inventory that skips it, and report a difference that is not there.
"""

from __future__ import annotations

import os
from pathlib import Path

from patchctl import tags
from patchctl.migrate import agent_cache

TAG = "Uky"


def _tagged_file(path: Path, size: int) -> None:
    """A file of exactly ``size`` bytes whose first line carries the tag."""
    line = f"x = 1  # {TAG}\n".encode()
    path.write_bytes(line + b"\n" * (size - len(line)))


def test_both_sides_have_the_same_limit() -> None:
    assert tags.MAX_SCAN == agent_cache.MAX_SCAN


def test_both_sides_read_a_file_at_the_limit_and_skip_one_byte_above(tmp_path: Path) -> None:
    limit = tags.MAX_SCAN
    _tagged_file(tmp_path / "at.py", limit)
    _tagged_file(tmp_path / "above.py", limit + 1)

    assert [h.path for h in tags.scan(tmp_path, {TAG})] == ["at.py"]

    cache = agent_cache.Cache({}, None, 0)
    rx, needles = tags.tag_regex({TAG}), [TAG.encode()]
    found = {name: cache.tags(name, os.path.join(tmp_path, name), rx, needles) for name in ("at.py", "above.py")}
    assert [name for name, lines in found.items() if lines] == ["at.py"]
