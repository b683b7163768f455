"""The trainer side of :mod:`.pagecache`: read the large shared libraries under given folders.

Run as a script by the trainer's interpreter with the trainer's environment (``python pageread.py``),
so that it walks the ``sys.path`` the workers import from; it imports nothing but the standard
library, so the trainer's Python need not have patchctl installed.
"""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

#: smaller libraries are read soon enough by the imports themselves
MIN_BYTES = 1 << 20
#: the most it reads (the GPU image's torch, CUDA and vLLM libraries are a few GiB)
BUDGET = 12 << 30
#: enough reads in flight to keep a network or NVMe disk's queue full
THREADS = 4
_CHUNK = 8 << 20


def libraries(roots: list[str], min_bytes: int = MIN_BYTES) -> list[tuple[int, str]]:
    """Every shared library of at least ``min_bytes`` under ``roots``, largest first, each once.

    Largest first: the CUDA libraries (cuBLAS, cuDNN, NCCL) and torch's own are the ones a
    process waits longest on, and the budget then goes to them.
    """
    seen: set[tuple[int, int]] = set()
    found: list[tuple[int, str]] = []
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d != "__pycache__" and not d.endswith((".dist-info", ".egg-info"))]
            for name in files:
                if not (name.endswith(".so") or ".so." in name):
                    continue
                path = os.path.join(folder, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                key = (st.st_dev, st.st_ino)
                if st.st_size >= min_bytes and key not in seen:
                    seen.add(key)
                    found.append((st.st_size, path))
    return sorted(found, reverse=True)


def available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (None where there is none)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def choose(found: list[tuple[int, str]], budget: int) -> list[tuple[int, str]]:
    """The libraries that fit the budget, taken in order."""
    chosen, total = [], 0
    for size, path in found:
        if total + size <= budget:
            chosen.append((size, path))
            total += size
    return chosen


def read(path: str) -> int:
    """Read one file to its end (into the page cache); the bytes read, 0 where it cannot be read."""
    done = 0
    try:
        with open(path, "rb", buffering=0) as f:
            while chunk := f.read(_CHUNK):
                done += len(chunk)
    except OSError:
        return done
    return done


def main(argv: list[str]) -> int:
    """Read the libraries under this interpreter's ``sys.path`` (or ``argv``'s folders); always exits 0."""
    started = time.monotonic()
    # sys.path[0] is this script's folder: patchctl's own, no part of the trainer's imports
    wanted = argv or sys.path[1:]
    roots = [p for p in dict.fromkeys(os.path.realpath(p) for p in wanted if p) if os.path.isdir(p)]
    found = libraries(roots)
    memory = available_bytes()
    budget = min(BUDGET, memory // 4) if memory else BUDGET
    chosen = choose(found, budget)
    print(f"{len(found)} libraries of >= {MIN_BYTES >> 20} MiB under {len(roots)} sys.path entries", flush=True)
    print(
        f"reading {len(chosen)} of them, {sum(s for s, _ in chosen) / 2**30:.2f} GiB (budget {budget / 2**30:.1f} GiB)"
    )
    with ThreadPoolExecutor(THREADS) as pool:
        total = sum(pool.map(read, [p for _, p in chosen]))
    took = time.monotonic() - started
    print(f"read {total / 2**30:.2f} GiB in {took:.1f} s ({total / 2**20 / max(took, 1e-3):.0f} MiB/s)", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover - run through BOOT
    sys.exit(main(sys.argv[1:]))
