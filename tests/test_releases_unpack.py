"""releases.unpack on a Python without tarfile's ``data`` filter (before 3.10.12): the members are
checked by hand, so a hostile release archive still cannot write outside the folder."""

from __future__ import annotations

import io
import re
import tarfile
from pathlib import Path

import pytest

from patchctl import releases
from patchctl.errors import UnsafeArchive


def archive(path: Path, *members: tarfile.TarInfo) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for m in members:
            data = b"x = 1\n" if m.isfile() else b""
            m.size = len(data)
            tar.addfile(m, io.BytesIO(data) if m.isfile() else None)
    return path


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


@pytest.fixture
def no_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(tarfile, "data_filter", raising=False)


@pytest.mark.usefixtures("no_filter")
def test_a_plain_release_unpacks(tmp_path: Path) -> None:
    ok = archive(tmp_path / "ok.tar.gz", member("verl-9/verl/__init__.py"), member("verl-9/x", tarfile.SYMTYPE, "verl"))
    top = releases.unpack(ok, tmp_path / "out")
    assert (top / "verl" / "__init__.py").read_text() == "x = 1\n"


@pytest.mark.usefixtures("no_filter")
@pytest.mark.parametrize(
    ("name", "kind", "link"),
    [
        ("verl-9/../../evil.py", tarfile.REGTYPE, ""),
        ("{tmp}/evil.py", tarfile.REGTYPE, ""),
        ("verl-9/link", tarfile.SYMTYPE, "{tmp}/evil.py"),
        ("verl-9/link", tarfile.SYMTYPE, "../../evil.py"),
        ("verl-9/hard", tarfile.LNKTYPE, "../evil.py"),
        ("verl-9/dev", tarfile.CHRTYPE, ""),
    ],
    ids=["dotdot", "absolute", "symlink-absolute", "symlink-dotdot", "hardlink-dotdot", "device"],
)
def test_a_member_leaving_the_folder_is_refused_before_anything_is_written(
    tmp_path: Path, name: str, kind: bytes, link: str
) -> None:
    """Each hostile name stays inside tmp_path, so a broken check harms nothing outside the test."""
    bad = member(name.format(tmp=tmp_path), kind, link.format(tmp=tmp_path))
    hostile = archive(tmp_path / "bad.tar.gz", member("verl-9/verl/__init__.py"), bad)
    with pytest.raises(UnsafeArchive, match=re.escape(bad.name)):
        releases.unpack(hostile, tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    assert not (tmp_path / "evil.py").exists()
