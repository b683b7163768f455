"""Cold-process `patchctl matrix` over cached verl releases, beside doing it one release at a time.

Each figure is the median wall time of N runs (default 5) of fresh processes, releases already
in the cache (the first, untimed pass downloads what is missing). The baseline is what a user
would otherwise type: one `patchctl apply --dry-run --target verl==X` per release, in sequence
(it plans only, on the cached trees; the matrix also unpacks each release and writes the patches
in a scratch copy). `matrix --jobs 1` shows what the parallel scratch copies save.

    python benchmarks/bench_matrix.py [--runs N] [--versions 0.4.1,0.5.0,0.6.0,0.6.1,0.7.0]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from patchctl import releases

GOAL_S = 5.0


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--versions", default="0.4.1,0.5.0,0.6.0,0.6.1,0.7.0")
    args = ap.parse_args()
    versions = args.versions.split(",")
    patchctl = str(Path(sys.executable).with_name("patchctl"))
    for v in versions:  # untimed: download and materialize what is missing
        releases.materialize(v)
    matrix = [patchctl, "matrix", "--versions", args.versions, "--json"]
    cases: dict[str, Callable[[], float]] = {
        "patchctl matrix": lambda: timed(matrix),
        "matrix --jobs 1": lambda: timed([*matrix, "--jobs", "1"]),
        f"{len(versions)} x apply --dry-run": lambda: sum(
            timed([patchctl, "apply", "--dry-run", "--json", "--target", f"verl=={v}"]) for v in versions
        ),
    }
    rows: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, case in cases.items():
            rows[name].append(case())
    med = {k: statistics.median(v) for k, v in rows.items()}
    base = f"{len(versions)} x apply --dry-run"
    print(f"{len(versions)} cached releases ({args.versions}), {os.cpu_count()} CPUs, median of {args.runs} cold runs")
    print(f"{'command':<26}{'median s':>10}{'min s':>9}{'vs baseline':>13}{'goal':>9}")
    for name in cases:
        ratio = f"{med[name] / med[base]:.2f}x" if name != base else "-"
        goal = f"<= {GOAL_S:.0f}" if name == "patchctl matrix" else ""
        print(f"{name:<26}{med[name]:>10.3f}{min(rows[name]):>9.3f}{ratio:>13}{goal:>9}")
    return 0 if med["patchctl matrix"] <= GOAL_S else 1


if __name__ == "__main__":
    sys.exit(main())
