"""patchctl's own member-by-member unpacking beside tarfile's, on the cached verl sdists.

Issue 39 replaced ``tarfile.extractall`` (with the ``data`` filter where the Python has one) by
one routine for every Python: each header checked first, then every file written by patchctl.
This prints the median wall time of N unpacks (default 5) of each release both ways, and the
ratio; tarfile's column is empty on a Python without the filter (Debian 12's 3.11.2).

    python benchmarks/bench_unpack.py [--runs N] [--versions 0.6.1,0.7.0,0.9.1]
"""

from __future__ import annotations

import argparse
import statistics
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from patchctl import archive, releases


def median_s(runs: int, unpack: Callable[[Path], object]) -> float:
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            unpack(Path(tmp))
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--versions", default="0.6.1,0.7.0,0.9.1")
    args = ap.parse_args()
    print(f"{'release':<10} {'members':>7} {'MB':>5} {'patchctl':>9} {'tarfile':>9} {'ratio':>6}")
    for version in args.versions.split(","):
        sdist = releases.sdist(version)
        with tarfile.open(sdist) as tar:
            members = tar.getmembers()
        ours = median_s(args.runs, lambda into, sdist=sdist: archive.unpack(sdist, into))
        theirs = None
        if hasattr(tarfile, "data_filter"):

            def extract(into: Path, sdist: Path = sdist) -> None:
                with tarfile.open(sdist) as tar:
                    tar.extractall(into, filter="data")

            theirs = median_s(args.runs, extract)
        size = sum(m.size for m in members) / 1e6
        other = f"{theirs * 1000:7.0f}ms {ours / theirs:6.2f}" if theirs else f"{'-':>9} {'-':>6}"
        print(f"{version:<10} {len(members):>7} {size:>5.1f} {ours * 1000:7.0f}ms {other}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
