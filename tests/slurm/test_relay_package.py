"""The package validate stages into each node's own tree without a shared root (slurm/relay.py
``package_tar``): the sources as they are, never a compiled file (another Python's bytecode on the
node) or a link (whose target the node's tree may not hold), from a real folder of files."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from patchctl.slurm import relay


def test_the_package_leaves_out_compiled_files_and_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "patchctl"
    (pkg / "sub" / "__pycache__").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "mod.py").write_text("X = 1\n")
    (pkg / "sub" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\x00")
    (pkg / "link.py").symlink_to(pkg / "__init__.py")
    os.mkfifo(pkg / "fifo")
    monkeypatch.setattr(relay.planning, "package_dir", lambda: pkg)
    with tarfile.open(fileobj=io.BytesIO(relay.package_tar())) as tar:
        got = {m.name: m.type for m in tar.getmembers()}
    assert got == {
        "patchctl": tarfile.DIRTYPE,
        "patchctl/__init__.py": tarfile.REGTYPE,
        "patchctl/sub": tarfile.DIRTYPE,
        "patchctl/sub/mod.py": tarfile.REGTYPE,
    }
