"""Releases on Debian 12's own Python (3.11.2, whose tarfile has no ``data`` filter), as root (#39).

There the old fallback, a plain ``extractall``, kept the archive's owners (verl 0.7.0's files
belong to uid 501, bytedance), and git then refused the tree as "dubious ownership". patchctl
now writes every member itself on every Python, so these tests run the real interpreter: the
machine's ``/usr/bin/python3``, with this checkout's sources and the test venv's packages on its
path. They skip only where that interpreter is absent or has the filter (then it is not the
Python of the issue; the routine is the same on every Python, and the other release tests cover it).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pytest
from tests.releases.release_index import SRC, member, tar_gz

from patchctl import releases

DEBIAN_PYTHON = Path("/usr/bin/python3")


@pytest.fixture(scope="module")
def old_python() -> list[str]:
    """``/usr/bin/python3`` when it lacks ``tarfile.data_filter``; skip otherwise."""
    if not DEBIAN_PYTHON.is_file():
        pytest.skip(f"{DEBIAN_PYTHON} is absent: no system Python without tarfile.data_filter to run")
    probe = subprocess.run(
        [str(DEBIAN_PYTHON), "-c", "import sys, tarfile; print(hasattr(tarfile, 'data_filter'), sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split(maxsplit=1)
    if probe[0] == "True":
        pytest.skip(f"{DEBIAN_PYTHON} has tarfile.data_filter: not the Python of issue 39")
    if probe[1].strip() != str(sys.version_info[:2]):
        pytest.skip(f"{DEBIAN_PYTHON} is Python {probe[1].strip()}: the test venv's packages are for another version")
    return [str(DEBIAN_PYTHON)]


def on_old_python(cmd: list[str], *args: str, cache: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``args`` run by the old Python, patchctl's dependencies taken from this venv (same minor version)."""
    path = os.pathsep.join([str(SRC), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    env = {**os.environ, "PYTHONPATH": path, "PATCHCTL_CACHE": str(cache), "PYTHONNOUSERSITE": "1"}
    return subprocess.run([*cmd, *args], env=env, capture_output=True, text=True, timeout=timeout)


def test_an_archive_of_other_owners_unpacks_as_this_user(old_python: list[str], tmp_path: Path) -> None:
    members = [member("verl-9/verl/__init__.py", b"x = 1\n", mode=0o4755), member("verl-9/README", b"r\n", mode=0o600)]
    for info, _ in members:
        info.uid, info.gid, info.uname, info.gname = 501, 20, "bytedance", "tiger"
    (tmp_path / "a.tar.gz").write_bytes(tar_gz(*members))
    code = (
        "import os, sys; from pathlib import Path; from patchctl import releases; "
        "top = releases.unpack(Path(sys.argv[1]), Path(sys.argv[2])); "
        "print(sorted((p.name, p.lstat().st_uid, oct(p.lstat().st_mode & 0o7777)) for p in [top, *top.rglob('*')]))"
    )
    done = on_old_python(old_python, "-c", code, str(tmp_path / "a.tar.gz"), str(tmp_path / "out"), cache=tmp_path)
    assert done.returncode == 0, done.stderr
    me = os.getuid()
    assert done.stdout.strip() == str(
        sorted([("verl-9", me, "0o755"), ("verl", me, "0o755"), ("__init__.py", me, "0o755"), ("README", me, "0o644")])
    )


def test_apply_verify_revert_on_a_release_of_other_owners(
    old_python: list[str], release_cache: Path, tmp_path: Path
) -> None:
    """The issue's own report: verl 0.7.0 (owned by uid 501 in its sdist) through the real CLI."""
    with tarfile.open(releases.sdist("0.7.0")) as tar:
        assert {m.uid for m in tar.getmembers()} == {501}
    cache = tmp_path / "cache"
    (cache / "releases").mkdir(parents=True)
    archive = shutil.copy(releases.sdist("0.7.0"), cache / "releases")
    digest = hashlib.sha256(Path(archive).read_bytes()).hexdigest()
    (cache / "releases" / "verl-0.7.0.tar.gz.sha256").write_text(digest + "\n")  # as a download records it
    patchctl = [*old_python, "-m", "patchctl"]
    for command in ("apply", "verify", "revert"):
        done = on_old_python(patchctl, command, "--target", "verl==0.7.0", cache=cache)
        assert done.returncode == 0, f"{command}: {done.stdout[-1500:]}{done.stderr[-1500:]}"
        assert "dubious ownership" not in done.stdout + done.stderr
    tree = cache / "trees" / "verl-0.7.0"
    assert {p.lstat().st_uid for p in tree.rglob("*")} == {os.getuid()}
    assert (
        subprocess.run(["git", "-C", str(tree), "status", "--porcelain"], capture_output=True, text=True).stdout == ""
    )
