#!/usr/bin/env python3
# Uky: pull the model's files into the OS page cache before training.
"""Read every weight and config file of a model once so later loads come from RAM.

vLLM and the FSDP workers each read the full checkpoint at start-up. On network or
slow local disks that is what makes the first training step take tens of minutes.
Reading the files once, sequentially and in large chunks, leaves them in the
kernel's page cache; as long as the machine has enough free memory, the loads
during training then run at memory speed.

    python3 warmup_model.py                  # MODEL_PATH from git_ignore.py
    python3 warmup_model.py /path/to/model   # any model directory

Only the standard library is used, so this can run before the training
environment is complete.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.abspath(__file__))
SUFFIXES = (".safetensors", ".bin", ".json")
DEFAULT_CHUNK_MB = 64


def model_path_from_git_ignore() -> str | None:
    path = os.path.join(ROOT, "git_ignore.py")
    if not os.path.isfile(path):
        return None
    namespace: dict = {"__name__": "git_ignore", "__file__": path}
    with open(path, encoding="utf-8") as handle:
        exec(compile(handle.read(), path, "exec"), namespace)
    value = namespace.get("MODEL_PATH")
    return value if isinstance(value, str) else None


def find_files(model_dir: str) -> list[str]:
    """Weight and json files under model_dir (recursively, so HF cache snapshots work), sorted."""
    found = []
    seen = set()  # HF cache snapshots are symlinks into blobs/; read each blob once
    for dirpath, dirnames, filenames in os.walk(model_dir, followlinks=True):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            real = os.path.realpath(path)
            if name.endswith(SUFFIXES) and real not in seen and os.path.isfile(real):
                seen.add(real)
                found.append(path)
    return found


def read_file(path: str, chunk_bytes: int) -> int:
    """Read path to the end, discarding the data; return the number of bytes read."""
    total = 0
    buffer = bytearray(chunk_bytes)
    view = memoryview(buffer)
    with open(path, "rb", buffering=0) as handle:
        if hasattr(os, "posix_fadvise"):
            try:
                os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
            except OSError:
                pass
        while True:
            n = handle.readinto(view)
            if not n:
                break
            total += n
    return total


def _mb(n_bytes: float) -> float:
    """Bytes to (decimal) megabytes."""
    return n_bytes / 1e6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Read a model's files once to warm the OS page cache.")
    parser.add_argument("model_dir", nargs="?", help="model directory (default: MODEL_PATH from git_ignore.py)")
    parser.add_argument("--chunk-mb", type=int, default=DEFAULT_CHUNK_MB, help="read size in MiB (default: %(default)s)")
    args = parser.parse_args(argv)

    model_dir = args.model_dir or model_path_from_git_ignore()
    if not model_dir:
        print("error: no model directory given and no MODEL_PATH in git_ignore.py "
              "(cp git_ignore.py.example git_ignore.py, or pass the directory)", file=sys.stderr)
        return 2
    model_dir = os.path.expanduser(model_dir)
    if not os.path.isdir(model_dir):
        print(f"error: {model_dir} is not a directory", file=sys.stderr)
        return 2

    files = find_files(model_dir)
    if not files:
        print(f"error: no *.safetensors, *.bin or *.json files under {model_dir}", file=sys.stderr)
        return 1

    total_size = sum(os.path.getsize(p) for p in files)
    print(f"Warming {len(files)} file(s), {_mb(total_size):,.0f} MB, from {model_dir}", flush=True)

    chunk_bytes = max(1, args.chunk_mb) * 1024 * 1024
    grand_total = 0
    started = time.monotonic()
    for index, path in enumerate(files, 1):
        t0 = time.monotonic()
        n = read_file(path, chunk_bytes)
        dt = max(time.monotonic() - t0, 1e-6)
        grand_total += n
        rel = os.path.relpath(path, model_dir)
        print(f"  [{index}/{len(files)}] {rel}: {_mb(n):,.1f} MB in {dt:.2f}s ({_mb(n) / dt:,.0f} MB/s)", flush=True)

    elapsed = max(time.monotonic() - started, 1e-6)
    print(f"Done: {_mb(grand_total):,.0f} MB in {elapsed:.1f}s ({_mb(grand_total) / elapsed:,.0f} MB/s). "
          "A second run at memory speed means the files are cached.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
