"""``storage``: a checksummed write and read-back on this host's tree, data and checkpoint dirs.

Three phases, each on every host at once. ``mark`` leaves a marker named for the run and this
node in ``DIR/.patchctl-health/``; ``measure`` then sees every node's markers there, so a
directory that several hosts share (an NFS or Lustre path) is measured once, by the first of
them, and reported as shared; ``clean`` removes the markers. Throughput comes from ``fio``
(direct I/O) where it is installed; otherwise from timed ``write``/``read`` calls with ``fsync``
and the page cache dropped for the file (``posix_fadvise DONTNEED``) before it is read back.
Either way the data is checked: a sha256 while writing against one while reading back.

The probe writes only files of its own, in a folder of its own (issue 41 req 5): each measurement
makes a fresh private folder (``mkdtemp``) inside the marker folder, creates its files there with
``O_EXCL | O_NOFOLLOW`` and removes the folder afterwards; no existing file is ever opened for
writing. fio never sees a path of the cluster config: it splits ``--filename`` (and
``--directory``) at ``:`` into a list of files, so a ``checkpoint_dir`` of ``/data/ck:1`` made it
write over ``/data/ck``. It runs inside the probe folder on a relative name patchctl chose.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from typing import Any

SUBDIR = ".patchctl-health"
#: the file fio writes and reads, relative to its working directory (the probe folder): no ``:``
FIO_FILE = "fio.bin"
CHUNK = 8 << 20
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def _folder(path: str) -> str:
    folder = os.path.join(path, SUBDIR)
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    if os.path.islink(folder) or not os.path.isdir(folder):
        raise OSError(f"{folder} is a link or not a folder; remove it")
    return folder


def mark(dirs: dict[str, str], tag: str) -> dict[str, str]:
    out = {}
    for name, path in dirs.items():
        try:
            if name == "checkpoint":  # the run would create it; a missing tree or data dir is the finding
                os.makedirs(path, exist_ok=True)
            elif not os.path.isdir(path):
                raise OSError(f"{path} does not exist")
            fd = os.open(os.path.join(_folder(path), tag), os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
            os.close(fd)
            out[name] = ""
        except OSError as exc:
            out[name] = str(exc)
    return out


def _fio(probe: str, size: int, rw: str) -> float:
    """MB/s of one fio job (1 MiB blocks, direct I/O, fsync at the end) on ``probe/FIO_FILE``.

    The folder is fio's working directory, never an argument: any path given to fio is a
    ``:``-separated list to it.
    """
    argv = [
        "fio",
        "--name=patchctl",
        f"--filename={FIO_FILE}",
        f"--rw={rw}",
        "--bs=1M",
        f"--size={size}",
        "--direct=1",
        "--end_fsync=1",
        "--output-format=json",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=True, cwd=probe)
    job = json.loads(done.stdout[done.stdout.index("{") :])["jobs"][0]
    return float(job["write" if rw == "write" else "read"]["bw_bytes"]) / 1e6


def _write(path: str, size: int, deadline: float) -> tuple[int, str, float]:
    """Bytes written, their sha256 and the seconds the writes and the fsync took."""
    block = bytearray(os.urandom(CHUNK))
    digest, written, spent = hashlib.sha256(), 0, 0.0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    try:
        while written < size and time.monotonic() < deadline:
            block[:8] = written.to_bytes(8, "little")  # every chunk differs: no dedup, no compression win
            part = memoryview(block)[: min(CHUNK, size - written)]
            digest.update(part)
            t0 = time.perf_counter()
            os.write(fd, part)
            spent += time.perf_counter() - t0
            written += len(part)
        t0 = time.perf_counter()
        os.fsync(fd)
        spent += time.perf_counter() - t0
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return written, digest.hexdigest(), spent


def _read(path: str) -> tuple[int, str, float]:
    digest, got, spent = hashlib.sha256(), 0, 0.0
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while True:
            t0 = time.perf_counter()
            part = os.read(fd, CHUNK)
            spent += time.perf_counter() - t0
            if not part:
                break
            digest.update(part)
            got += len(part)
    finally:
        os.close(fd)
    return got, digest.hexdigest(), spent


def measure_one(path: str, size: int, seconds: float) -> dict[str, Any]:
    folder = _folder(path)
    free = shutil.disk_usage(path).free
    if free < size * 1.1:
        return {"error": f"only {free / 1e9:.1f} GB free, the probe needs {size / 1e9:.1f} GB"}
    probe = tempfile.mkdtemp(prefix="probe-", dir=folder)  # new, 0700: nothing in it but the probe's own
    target = os.path.join(probe, "python.bin")
    try:
        written, wrote_sum, w_s = _write(target, size, time.monotonic() + seconds / 2)
        read, read_sum, r_s = _read(target)
        out: dict[str, Any] = {
            "bytes": written,
            "checksum_ok": read == written and read_sum == wrote_sum,
            "write_mbps": written / max(w_s, 1e-9) / 1e6,
            "read_mbps": read / max(r_s, 1e-9) / 1e6,
            "method": "python write/read, fsync, page cache dropped (fadvise)",
            "partial": written < size,
        }
        if shutil.which("fio"):
            os.unlink(target)
            try:
                out["write_mbps"], out["read_mbps"] = _fio(probe, written, "write"), _fio(probe, written, "read")
                out["method"] = "fio 1 MiB direct I/O; checksum by python"
            except (subprocess.SubprocessError, OSError, ValueError, KeyError, IndexError) as exc:
                # e.g. a file system without O_DIRECT (tmpfs): python's figures stand, and say why
                out["method"] += f" (fio failed: {type(exc).__name__})"
        return out
    finally:
        shutil.rmtree(probe, ignore_errors=True)


def run(request: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> int:
    dirs, tag = dict(request["dirs"]), f"{request['run']}.{request['node']}"
    if request["phase"] == "mark":
        emit({"event": "reply", "marked": mark(dirs, tag)})
        return 0
    if request["phase"] == "clean":  # once every host has looked: the markers, then the folder if empty
        for path in dirs.values():
            for leftover in (os.path.join(path, SUBDIR, tag), os.path.join(path, SUBDIR)):
                with contextlib.suppress(OSError):
                    os.unlink(leftover) if leftover.endswith(tag) else os.rmdir(leftover)
        emit({"event": "reply"})
        return 0
    out: dict[str, Any] = {}
    for name, path in dirs.items():
        try:
            folder = _folder(path)
            sharers = sorted(int(f.split(".")[1]) for f in os.listdir(folder) if f.startswith(request["run"] + "."))
            if sharers and sharers[0] != int(request["node"]):
                out[name] = {"shared_with": sharers, "tested_by": sharers[0]}
            else:
                out[name] = {
                    "shared_with": sharers,
                    **measure_one(path, int(request["bytes"]), float(request["seconds"])),
                }
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    emit({"event": "reply", "dirs": out})
    return 0
