"""patchctl.archive: what an archive may put on disk, checked on real tar and zip files.

Every hostile name below stays inside tmp_path, so a broken check harms nothing outside the test.
"""

from __future__ import annotations

import gzip
import os
import resource
import signal
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from tests.releases.release_index import SRC, member, tar_gz

from patchctl import archive
from patchctl.errors import ArchiveTooLarge, BadArchive, UnsafeArchive

TOP = "verl-9"


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def unpacked(root: Path) -> dict[str, str]:
    """Each path under ``root``: its kind, and a file's text or a link's target."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = "-> " + os.readlink(p)
        elif p.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = p.read_text()
    return out


def test_a_release_unpacks_as_plain_data(tmp_path: Path) -> None:
    """Owners and special bits never come from the archive: files are 0644, or 0755 with any x bit."""
    members = [
        member(f"./{TOP}", kind=tarfile.DIRTYPE, mode=0o700),
        member(f"{TOP}/run.sh", b"echo\n", mode=0o4711),
        member(f"{TOP}/secret.py", b"x = 1\n", mode=0o600),
        member(f"{TOP}/group.py", b"y = 2\n", mode=0o2670),
        member(f"{TOP}/deep/er/a.py", b"a\n"),
        member(f"{TOP}/deep", kind=tarfile.DIRTYPE, mode=0o777),  # after its files, as tar may list it
        member(f"{TOP}/other-x.sh", b"o\n", mode=0o601),
        member(f"{TOP}/same.py", kind=tarfile.LNKTYPE, link=f"./{TOP}/secret.py"),
        member(f"{TOP}/deep/link", kind=tarfile.SYMTYPE, link="../run.sh"),
    ]
    for info, _ in members:
        info.uid, info.gid, info.uname, info.gname = 501, 20, "bytedance", "tiger"
    top = archive.unpack(write(tmp_path / "ok.tar.gz", tar_gz(*members)), tmp_path / "new" / "out")
    assert top == tmp_path / "new" / "out" / TOP
    assert unpacked(top) == {
        "deep": "dir",
        "deep/er": "dir",
        "deep/er/a.py": "a\n",
        "deep/link": "-> ../run.sh",
        "group.py": "y = 2\n",
        "other-x.sh": "o\n",
        "run.sh": "echo\n",
        "same.py": "x = 1\n",
        "secret.py": "x = 1\n",
    }
    modes = {p.name: stat.S_IMODE(p.lstat().st_mode) for p in top.rglob("*") if not p.is_symlink() and p.is_file()}
    assert modes == {
        "run.sh": 0o755,
        "secret.py": 0o644,
        "group.py": 0o755,
        "other-x.sh": 0o755,
        "a.py": 0o644,
        "same.py": 0o644,
    }
    umask = os.umask(0o022)
    os.umask(umask)
    dirs = {stat.S_IMODE(p.stat().st_mode) for p in [top, top / "deep", top / "deep" / "er"]}
    assert dirs == {0o755 & ~umask}
    assert {p.lstat().st_uid for p in [top, *top.rglob("*")]} == {os.getuid()}
    assert (top / "same.py").stat().st_ino != (top / "secret.py").stat().st_ino  # a copy, not a link
    assert [p.name for p in (tmp_path / "new" / "out").iterdir()] == [TOP]  # the staging folder is gone


def test_version_control_and_patchctl_folders_are_dropped(tmp_path: Path) -> None:
    """An archive's .git would configure and run git in the tree (#41); .gitignore and .github are data."""
    hostile = tar_gz(
        member(f"{TOP}/verl/__init__.py"),
        member(f"{TOP}/.git/config", b"[core]\n\tfsmonitor = touch /tmp/x\n"),
        member(f"{TOP}/.git/hooks/pre-commit", b"#!/bin/sh\n", mode=0o755),
        member(f"{TOP}/sub/.git", b"gitdir: /elsewhere\n"),
        member(f"{TOP}/sub/b.py", b""),
        member(f"{TOP}/.GIT/config", b"[core]\n"),
        member(f"{TOP}/.hg/hgrc", b"[hooks]\n"),
        member(f"{TOP}/.svn/entries", b"12\n"),
        member(f"{TOP}/.patchctl/applied.json", b"{}"),
        member(f"{TOP}/.patchctl-journal/op", b"{}"),
        member(f"{TOP}/hooks", kind=tarfile.SYMTYPE, link=".git/hooks"),
        member(f"{TOP}/.gitignore", b"*.pyc\n"),
        member(f"{TOP}/.github/ci.yml", b"on: push\n"),
    )
    top = archive.unpack(write(tmp_path / "a.tar.gz", hostile), tmp_path / "out")
    assert sorted(unpacked(top)) == [
        ".github",
        ".github/ci.yml",
        ".gitignore",
        "sub",
        "sub/b.py",
        "verl",
        "verl/__init__.py",
    ]


def unsafe_cases(tmp: Path) -> list[tuple[tuple[tarfile.TarInfo, bytes], str]]:
    return [
        (member(f"{TOP}/../../evil.py", b"x"), "climbs out of the folder with .."),
        (member(f"{tmp}/evil.py", b"x"), "is an absolute path"),
        (member(f"{TOP}/link", kind=tarfile.SYMTYPE, link=f"{tmp}/evil.py"), "links to the absolute path"),
        (
            member(f"{TOP}/link", kind=tarfile.SYMTYPE, link="../../evil.py"),
            r"links outside the tree \('\.\./\.\./evil\.py'\)",
        ),
        (member(f"{TOP}/link", kind=tarfile.SYMTYPE, link=".."), r"links outside the tree \('\.\.'\)"),
        (member(f"{TOP}/link", kind=tarfile.SYMTYPE, link=""), "is a link with no target"),
        (member(f"{TOP}/hard", kind=tarfile.LNKTYPE, link="../evil.py"), "which is no file before it"),
        (member(f"{TOP}/hard", kind=tarfile.LNKTYPE, link=f"/{TOP}/a.py"), "which is no file before it"),
        (member(f"{TOP}/hard", kind=tarfile.LNKTYPE, link=f"{TOP}/later.py"), "which is no file before it"),
        (member(f"{TOP}/dev", kind=tarfile.CHRTYPE), "is a device, FIFO or other special file"),
        (member(f"{TOP}/fifo", kind=tarfile.FIFOTYPE), "is a device, FIFO or other special file"),
    ]


@pytest.mark.parametrize(
    "case",
    range(11),
    ids=[
        "dotdot",
        "absolute",
        "symlink-absolute",
        "symlink-dotdot",
        "symlink-above-top",
        "symlink-empty",
        "hardlink-dotdot",
        "hardlink-absolute",
        "hardlink-forward",
        "device",
        "fifo",
    ],
)
def test_a_member_that_is_not_plain_data_inside_is_refused_before_anything_is_written(
    tmp_path: Path, case: int
) -> None:
    bad, problem = unsafe_cases(tmp_path)[case]
    hostile = tar_gz(member(f"{TOP}/a.py", b"a"), bad, member(f"{TOP}/later.py", b"b"))
    with pytest.raises(UnsafeArchive, match=problem) as refused:
        archive.unpack(write(tmp_path / "bad.tar.gz", hostile), tmp_path / "out")
    assert repr(bad[0].name) in str(refused.value) and str(tmp_path / "bad.tar.gz") in str(refused.value)
    assert list((tmp_path / "out").iterdir()) == []
    assert not (tmp_path / "evil.py").exists()


def test_a_link_leaving_through_another_link_is_refused(tmp_path: Path) -> None:
    """Each link read alone stays inside (d/x -> .. is the top; d/y -> x/../.. reads as the top too),
    but on disk d/y resolves through d/x to the folder above the tree."""
    hostile = tar_gz(
        member(f"{TOP}/d/a.py", b"a"),
        member(f"{TOP}/d/x", kind=tarfile.SYMTYPE, link=".."),
        member(f"{TOP}/d/y", kind=tarfile.SYMTYPE, link="x/../.."),
    )
    with pytest.raises(UnsafeArchive, match=r"member 'verl-9/d/y' links outside the tree through another link"):
        archive.unpack(write(tmp_path / "chain.tar.gz", hostile), tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


def test_a_link_inside_through_another_link_is_kept(tmp_path: Path) -> None:
    ok = tar_gz(
        member(f"{TOP}/d/e/a.py", b"a"),
        member(f"{TOP}/d/x", kind=tarfile.SYMTYPE, link="e"),
        member(f"{TOP}/y", kind=tarfile.SYMTYPE, link="d/x/a.py"),
        member(f"{TOP}/top", kind=tarfile.SYMTYPE, link="."),
    )
    top = archive.unpack(write(tmp_path / "ok.tar.gz", ok), tmp_path / "out")
    assert (top / "y").read_text() == "a" and (top / "top").resolve() == top.resolve()


EXISTS = r"cannot be written \(File exists\)"


@pytest.mark.parametrize(
    ("members", "problem"),
    [
        ([member(f"{TOP}/a.py", b"a"), member(f"{TOP}/a.py", b"b")], f"member 'verl-9/a.py' {EXISTS}"),
        ([member(f"{TOP}/a", b"a"), member(f"{TOP}/a", kind=tarfile.DIRTYPE)], f"member 'verl-9/a' {EXISTS}"),
        ([member(f"{TOP}/a", b"a"), member(f"{TOP}/a/b.py", b"b")], f"member 'verl-9/a/b.py' {EXISTS}"),
        ([member(f"{TOP}/d/b.py", b"b"), member(f"{TOP}/d", kind=tarfile.SYMTYPE, link=".")], f"'verl-9/d' {EXISTS}"),
        ([member(f"{TOP}/{'x' * 300}.py", b"")], r"cannot be written \(File name too long\)"),
        ([member(f"{TOP}/a.py"), member("other/b.py")], r"unexpected layout \(expected one top directory\)"),
        ([member(TOP, b"a file")], r"unexpected layout"),
        ([], r"unexpected layout"),
        ([member(f"{TOP}/.git/config", b"")], r"unexpected layout"),
    ],
    ids=[
        "file-twice",
        "file-then-dir",
        "file-as-folder",
        "link-over-folder",
        "name-too-long",
        "two-tops",
        "top-file",
        "empty",
        "only-git",
    ],
)
def test_a_layout_that_is_not_one_tree_is_refused(tmp_path: Path, members: list, problem: str) -> None:
    with pytest.raises(BadArchive, match=problem):
        archive.unpack(write(tmp_path / "bad.tar.gz", tar_gz(*members)), tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


def test_a_damaged_archive_is_refused_as_such(tmp_path: Path) -> None:
    data = tar_gz(member(f"{TOP}/a.py", os.urandom(200_000).hex().encode()))
    with pytest.raises(BadArchive, match="is corrupt or truncated"):
        archive.unpack(write(tmp_path / "cut.tar.gz", data[: len(data) // 2]), tmp_path / "out")
    info = tarfile.TarInfo(f"{TOP}/a.py")
    info.size = 200_000  # a plain tar cut inside the member's data
    with pytest.raises(BadArchive, match=r"is corrupt or truncated \(unexpected end of data\)"):
        archive.unpack(write(tmp_path / "cut.tar", info.tobuf() + bytes(1000)), tmp_path / "out1")
    with pytest.raises(BadArchive, match="is not a readable archive"):
        archive.unpack(write(tmp_path / "junk.tar.gz", b"not an archive at all" * 100), tmp_path / "out2")
    with pytest.raises(BadArchive, match="is not a readable archive"):
        archive.unpack(write(tmp_path / "junk.zip", b"not an archive at all" * 100), tmp_path / "out3")


def bomb(size: int) -> bytes:
    """A .tar.gz of ``size`` bytes of zeros in about size/1000 bytes: gzip members of 1 MiB each."""
    info = tarfile.TarInfo(f"{TOP}/zeros")
    info.size = size
    mib = gzip.compress(bytes(1 << 20), 9)
    return (
        gzip.compress(member(f"{TOP}/a.py", b"a")[0].tobuf() + b"a".ljust(512, b"\0") + info.tobuf())
        + mib * (size >> 20)
        + gzip.compress(bytes(1024))
    )


def unpack_with_small_files(path: Path, into: Path) -> subprocess.CompletedProcess[str]:
    """``archive.unpack`` in a process that may write 16 MiB per file at most (RLIMIT_FSIZE): a
    larger write fails there with EFBIG, as on a full or size-limited file system."""

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 << 20, 16 << 20))

    code = (
        "import sys; from pathlib import Path; from patchctl import archive; archive.unpack(*map(Path, sys.argv[1:]))"
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(path), str(into)],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        preexec_fn=small_files,
        timeout=120,
    )


def test_a_small_archive_holding_a_huge_file_is_refused_before_it_is_written(tmp_path: Path) -> None:
    """1 GiB of zeros in a 1 MiB archive: writing the member at all would end in EFBIG, not the refusal."""
    data = bomb(1 << 30)
    assert len(data) < 2 << 20
    done = unpack_with_small_files(write(tmp_path / "bomb.tar.gz", data), tmp_path / "out")
    assert "patchctl.errors.sources.ArchiveTooLarge" in done.stderr, done.stderr[-2000:]
    assert "unpacks to more than 512 MiB (member 'verl-9/zeros' is 1073741824 bytes)" in done.stderr
    assert list((tmp_path / "out").iterdir()) == []


def test_a_write_the_machine_refuses_is_not_blamed_on_the_archive(tmp_path: Path) -> None:
    """A 32 MiB member is within the caps; the file system refusing it is the machine's error
    (the CLI names it as such), not a bad archive to remove from the cache."""
    done = unpack_with_small_files(write(tmp_path / "big.tar.gz", bomb(32 << 20)), tmp_path / "out")
    assert done.stderr.strip().splitlines()[-1].startswith("OSError: [Errno 27] File too large"), done.stderr
    assert list((tmp_path / "out").iterdir()) == []


def test_the_caps_hold_at_their_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Members and bytes up to the caps unpack; one more of either is refused (caps made small here)."""
    monkeypatch.setattr(archive, "MAX_MEMBERS", 4)
    monkeypatch.setattr(archive, "MAX_BYTES", 10)
    four = [
        member(TOP, kind=tarfile.DIRTYPE),
        member(f"{TOP}/a", b"12345"),
        member(f"{TOP}/b", kind=tarfile.LNKTYPE, link=f"{TOP}/a"),
    ]
    top = archive.unpack(write(tmp_path / "ok.tar.gz", tar_gz(*four, member(f"{TOP}/.git/x"))), tmp_path / "ok")
    assert (top / "b").read_text() == "12345"
    with pytest.raises(ArchiveTooLarge, match="holds more than 4 members"):
        archive.unpack(
            write(tmp_path / "many.tar.gz", tar_gz(*four, member(f"{TOP}/c"), member(f"{TOP}/d"))), tmp_path / "m"
        )
    with pytest.raises(ArchiveTooLarge, match=r"member 'verl-9/b' is 6 bytes"):  # a hard link costs its file's bytes
        big = [member(f"{TOP}/a", b"123456"), member(f"{TOP}/b", kind=tarfile.LNKTYPE, link=f"{TOP}/a")]
        archive.unpack(write(tmp_path / "big.tar.gz", tar_gz(*big)), tmp_path / "b")
    assert list((tmp_path / "b").iterdir()) == []


def a_zip(path: Path, *entries: tuple[str, bytes, int]) -> Path:
    """Entries are (name, content, Unix mode with its file type)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.external_attr = mode << 16
            zf.writestr(info, data)
    return path


def test_a_zip_release_unpacks_as_plain_data(tmp_path: Path) -> None:
    ok = a_zip(
        tmp_path / "ok.zip",
        (f"{TOP}/", b"", stat.S_IFDIR | 0o700),
        (f"{TOP}/run.sh", b"echo\n", stat.S_IFREG | 0o4700),
        (f"{TOP}/a.py", b"a\n", stat.S_IFREG | 0o600),
        (f"{TOP}/link", b"a.py", stat.S_IFLNK | 0o777),
        (f"{TOP}/.git/config", b"[core]\n", stat.S_IFREG | 0o644),
    )
    with zipfile.ZipFile(ok, "a") as zf:  # a zip made without Unix modes (external_attr 0)
        zf.writestr(zipfile.ZipInfo(f"{TOP}/plain/"), b"")
        zf.writestr(zipfile.ZipInfo(f"{TOP}/plain/b.py"), b"b\n")
    top = archive.unpack(ok, tmp_path / "out")
    assert unpacked(top) == {"a.py": "a\n", "link": "-> a.py", "plain": "dir", "plain/b.py": "b\n", "run.sh": "echo\n"}
    assert stat.S_IMODE((top / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((top / "a.py").stat().st_mode) == 0o644


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ((f"{TOP}/link", b"../../evil.py", stat.S_IFLNK | 0o777), r"links outside the tree \('\.\./"),
        ((f"{TOP}/link", b"x" * 4097, stat.S_IFLNK | 0o777), "is a link of more than 4096 bytes"),
        ((f"{TOP}/dev", b"", stat.S_IFCHR | 0o644), "is a device, FIFO or other special file"),
        ((f"{TOP}/../evil.py", b"x", stat.S_IFREG | 0o644), "climbs out of the folder"),
    ],
    ids=["symlink-out", "symlink-huge", "device", "dotdot"],
)
def test_a_zip_member_that_is_not_plain_data_inside_is_refused(tmp_path: Path, entry: tuple, problem: str) -> None:
    bad = a_zip(tmp_path / "bad.zip", (f"{TOP}/a.py", b"a", stat.S_IFREG | 0o644), entry)
    with pytest.raises(UnsafeArchive, match=problem):
        archive.unpack(bad, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


def test_an_encrypted_or_oversized_zip_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locked = a_zip(tmp_path / "locked.zip", (f"{TOP}/a.py", b"a", stat.S_IFREG | 0o644))
    raw = bytearray(locked.read_bytes())
    for at in (6, raw.rindex(b"PK\x01\x02") + 8):  # the flag bits of the local and the central header
        raw[at] |= 1
    with pytest.raises(UnsafeArchive, match=r"member 'verl-9/a\.py' is encrypted"):
        archive.unpack(write(locked, bytes(raw)), tmp_path / "out")
    monkeypatch.setattr(archive, "MAX_BYTES", 10)
    full = a_zip(tmp_path / "full.zip", (f"{TOP}/", b"", stat.S_IFDIR | 0o755), (f"{TOP}/a.py", b"a" * 10, 0o100644))
    assert (archive.unpack(full, tmp_path / "full") / "a.py").read_bytes() == b"a" * 10
    big = a_zip(tmp_path / "big.zip", (f"{TOP}/a.py", b"a" * 11, stat.S_IFREG | 0o644))
    with pytest.raises(ArchiveTooLarge, match="unpacks to more than 0 MiB"):
        archive.unpack(big, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


def test_a_zip_whose_member_is_damaged_is_refused(tmp_path: Path) -> None:
    ok = a_zip(tmp_path / "d.zip", (f"{TOP}/a.py", os.urandom(5000), stat.S_IFREG | 0o644))
    raw = bytearray(ok.read_bytes())
    raw[100] ^= 0xFF  # inside the deflated data: the CRC no longer matches
    with pytest.raises(BadArchive, match=r"is corrupt or truncated at member 'verl-9/a\.py'"):
        archive.unpack(write(ok, bytes(raw)), tmp_path / "out")


def test_a_zip_link_as_long_as_the_cap_is_left_to_the_file_system(tmp_path: Path) -> None:
    """4096 bytes are read; Linux takes 4095 at most, and says so: the archive's fault, one line."""
    bad = a_zip(tmp_path / "long.zip", (f"{TOP}/a.py", b"a", 0o100644), (f"{TOP}/l", b"x" * 4096, stat.S_IFLNK | 0o777))
    with pytest.raises(BadArchive, match=r"member 'verl-9/l' cannot be written \(File name too long\)"):
        archive.unpack(bad, tmp_path / "out")


def test_an_archive_of_more_members_than_any_release_is_refused(tmp_path: Path) -> None:
    """50001 empty members (25 MB of headers, 60 kB gzipped): refused at the 50001st header."""
    template = bytearray(tarfile.TarInfo(f"{TOP}/f000000").tobuf())
    at = template.index(b"f000000")
    headers = bytearray()
    for i in range(50_001):  # tobuf() for each would take seconds: the name and checksum patched instead
        header = bytearray(template)
        header[at : at + 7], header[148:156] = b"f%06d" % i, b" " * 8
        header[148:155] = b"%06o\0" % sum(header)
        headers += header
    path = write(tmp_path / "many.tar.gz", gzip.compress(bytes(headers) + bytes(1024), 1))
    with pytest.raises(ArchiveTooLarge, match="holds more than 50000 members"):
        archive.unpack(path, tmp_path / "out")
