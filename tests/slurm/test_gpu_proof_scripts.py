"""The GPU proof's package installers (docs/validation/slurm/run_gpu.sh), run for real on throwaway
roots: a Debian package built here with ``dpkg-deb --build`` and shared libraries built with ``gcc``.

Both bugs broke the one-GPU Slurm proof on nvidia-h200 (2026-11-29): unpacking Slurm's packages
into ``/`` replaced the image's ``/lib -> usr/lib`` link with a folder (Triton's gcc link then
failed: ``cannot find /lib/x86_64-linux-gnu/libc.so.6``), and Debian's copies of libraries the
image already has were put ahead of the image's own and later rewritten under a running bash.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "validation" / "slurm" / "run_gpu.sh"

pytestmark = pytest.mark.skipif(
    any(shutil.which(t) is None for t in ("bash", "dpkg-deb", "tar", "gcc", "readelf", "ldconfig")),
    reason="needs bash, dpkg-deb, tar, gcc, readelf and ldconfig",
)


def call(function: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """One shell function of run_gpu.sh, taken out of the script as it is (nothing else of it runs)."""
    body = f'eval "$(sed -n \'/^{function}() {{/,/^}}/p\' "$0")"; {function} "$@"'
    return subprocess.run(
        ["bash", "-c", body, str(SCRIPT), *args],
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", **(env or {})},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_unpack_root_keeps_the_images_link_to_a_folder(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "DEBIAN").mkdir(parents=True)
    (pkg / "DEBIAN" / "control").write_text(
        "Package: pcv-units\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@localhost>\nDescription: t\n"
    )
    (pkg / "lib" / "systemd" / "system").mkdir(parents=True)
    (pkg / "lib" / "systemd" / "system" / "slurmd.service").write_text("[Unit]\n")
    (pkg / "usr" / "sbin").mkdir(parents=True)
    (pkg / "usr" / "sbin" / "slurmd").write_text("#!/bin/sh\n")
    deb = tmp_path / "pcv-units.deb"
    subprocess.run(["dpkg-deb", "--build", "--root-owner-group", str(pkg), str(deb)], check=True, capture_output=True)
    root = tmp_path / "root"
    (root / "usr" / "lib" / "x86_64-linux-gnu").mkdir(parents=True)
    (root / "usr" / "lib" / "x86_64-linux-gnu" / "libc.so.6").write_text("the image's libc\n")
    (root / "lib").symlink_to("usr/lib")

    r = call("unpack_root", str(deb), str(root))

    assert r.returncode == 0, r.stderr
    assert (root / "lib").is_symlink(), "the image's /lib -> usr/lib link was replaced by a folder"
    assert (root / "lib" / "x86_64-linux-gnu" / "libc.so.6").read_text() == "the image's libc\n"
    assert (root / "usr" / "lib" / "systemd" / "system" / "slurmd.service").is_file()
    assert (root / "usr" / "sbin" / "slurmd").is_file()


def shared_library(path: Path, soname: str) -> None:
    src = path.with_suffix(".c")
    src.write_text("int pcv_answer(void) { return 42; }\n")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(path), str(src)], check=True, capture_output=True
    )
    src.unlink()


def test_libs_in_adds_only_sonames_the_image_lacks_and_never_rewrites_one(tmp_path: Path) -> None:
    have = next(
        line.split()[0]
        for line in subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout.splitlines()
        if line.strip().startswith("libc.so.6 ")
    )
    new = f"libpcvgpuproof{tmp_path.name.replace('-', '').replace('_', '')}.so.3"
    libs = tmp_path / "unpacked" / "usr" / "lib" / "x86_64-linux-gnu"
    libs.mkdir(parents=True)
    # as a package has them: the real file under its full version, the soname a link to it
    shared_library(libs / f"{have}.99.1", have)
    (libs / have).symlink_to(f"{have}.99.1")
    shared_library(libs / f"{new}.0.1", new)
    (libs / new).symlink_to(f"{new}.0.1")
    dest = tmp_path / "usrlocallib"
    dest.mkdir()

    r = call("libs_in", str(tmp_path / "unpacked"), env={"LIBDIR": str(dest)})

    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in dest.iterdir()) == sorted([new, f"{new}.0.1"]), "the image's own libc was shadowed"
    assert (dest / new).resolve() == (dest / f"{new}.0.1").resolve()
    inode = (dest / f"{new}.0.1").stat().st_ino
    ctime = (dest / f"{new}.0.1").stat().st_ctime_ns

    again = call("libs_in", str(tmp_path / "unpacked"), env={"LIBDIR": str(dest)})

    assert again.returncode == 0, again.stdout + again.stderr
    st = (dest / f"{new}.0.1").stat()
    assert (st.st_ino, st.st_ctime_ns) == (inode, ctime), "a library already in place was written over"
