"""Reading torch's and CUDA's shared libraries into the page cache while the trainer starts.

On a machine that has not run torch since it booted, every verl process pays for reading
gigabytes of ``.so`` files from disk: the driver when it imports torch, the GPU worker when its
first step loads cuBLAS/cuDNN kernels (on the GPU test machine ~2.5 s and ~3.3 s of a cold smoke
run). A background thread that reads those files with large sequential reads, starting the
moment ``patchctl train`` does, takes that I/O off the critical path. It reads only, changes
nothing, and costs nothing on a warm machine (the reads hit the cache).
"""

from __future__ import annotations

import importlib.util
import threading
import time
from pathlib import Path

#: packages whose shared libraries verl's processes load, in the order they need them
PACKAGES = ("torch", "nvidia", "triton")
CHUNK = 16 << 20
#: stop after this many bytes: the point is the hot libraries, not the whole environment
LIMIT = 8 << 30


def _roots() -> list[Path]:
    roots = []
    for name in PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.submodule_search_locations:
            roots += [Path(p) for p in spec.submodule_search_locations]
    return roots


def libraries(roots: list[Path] | None = None) -> list[Path]:
    """The shared libraries under ``roots``, largest first within each package."""
    out: list[Path] = []
    for root in _roots() if roots is None else roots:
        found = [p for p in root.rglob("*.so*") if p.is_file() and not p.is_symlink()]
        out += sorted(found, key=lambda p: -p.stat().st_size)
    return out


def _read(files: list[Path], limit: int) -> int:
    done = 0
    buf = bytearray(CHUNK)
    for path in files:
        try:
            with open(path, "rb", buffering=0) as f:
                while done < limit:
                    n = f.readinto(buf)
                    if not n:
                        break
                    done += n
        except OSError:
            continue
        if done >= limit:
            break
    return done


def start(roots: list[Path] | None = None, limit: int = LIMIT) -> dict[str, float]:
    """Start the background read (a daemon thread: it never delays the command's exit).

    The returned dict fills in as it goes (``files``, ``bytes``, and ``seconds`` once done), for
    the run report.
    """
    stats: dict[str, float] = {}

    def work() -> None:
        t0 = time.monotonic()
        files = libraries(roots)
        stats["files"] = len(files)
        stats["bytes"] = _read(files, limit)
        stats["seconds"] = round(time.monotonic() - t0, 2)

    threading.Thread(target=work, name="prefetch-libraries", daemon=True).start()
    return stats
