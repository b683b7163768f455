"""Peak memory of `patchctl matrix`, this tree beside an earlier revision, in one run.

Each run is a fresh process (`python -m patchctl matrix ... --json`); the figure is the peak RSS
of its largest process (the parent or a worker: ``RUSAGE_CHILDREN``), with the CPU time of all of
them. The revisions alternate, so a busy machine slows both alike, and every run's JSON must be
byte-identical to the first one's: a change that saved memory by changing outcomes would show here.

    python benchmarks/bench_matrix_memory.py --before REV -p PATCHSET [--repo VERL_CLONE] \
        --versions V1,V2,... [--runs 3]

The fork patchsets of benchmarks/bench_forks.py (WORK/FORK/patchset-cli) are the large inputs;
`--repo` a verl clone carries what does not fit along upstream's history. (`bench_history.py --matrix`
times `--repo` against `--no-history` per source tree; this compares two trees on one command.)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_history import PROBE
from patchctl import releases

ROOT = Path(__file__).resolve().parents[1]


def measure(src: Path, argv: list[str], out: Path, cache: Path | None) -> tuple[float, float]:
    """CPU s and peak RSS MB of one matrix run with ``src`` first on the path (bench_history's
    probe: every descendant reaped, the walk's helpers too); with ``cache``, a fresh
    ``PATCHCTL_CACHE`` holding only a copy of the downloaded releases (a first matrix: no walk,
    load or proof cached)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    if cache is not None:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.copytree(releases.cache_dir() / "releases", cache / "releases")
        env["PATCHCTL_CACHE"] = str(cache)
    probe = [sys.executable, "-c", PROBE, str(out), sys.executable, "-m", "patchctl", *argv]
    done = subprocess.run(probe, capture_output=True, text=True, env=env)
    _wall, cpu, rss, rc = json.loads(done.stdout)
    if rc not in (0, 1):  # 1: some patch does not apply somewhere, the matrix's own answer
        sys.exit(f"matrix exited {rc} with {src}: run it by hand to see why")
    return cpu, rss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="the revision to compare with (a commit of this repository)")
    ap.add_argument("-p", "--patchset", required=True)
    ap.add_argument("--repo", help="a verl clone (matrix --repo)")
    ap.add_argument("--versions", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="each run with a fresh cache (releases copied in)")
    args = ap.parse_args()
    argv = ["matrix", "--versions", args.versions, "-p", args.patchset, "--json"]
    if args.repo:
        argv += ["--repo", args.repo]
    with tempfile.TemporaryDirectory(prefix="bench-matrix-memory-") as tmp:
        before = Path(tmp) / "before"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(before), args.before], check=True
        )
        try:
            trees = {f"before ({args.before})": before / "src", "this tree": ROOT / "src"}
            figures: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
            first: bytes | None = None
            for i in range(args.runs):
                for name, src in trees.items():
                    out = Path(tmp) / f"out-{i}-{len(figures[name])}.json"
                    cache = Path(tmp) / "cache" if args.cold else None
                    figures[name].append(measure(src, argv, out, cache))
                    first = first if first is not None else out.read_bytes()
                    if out.read_bytes() != first:
                        sys.exit(f"{name}: run {i + 1}'s matrix differs from the first run's ({out})")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)], check=False)
    cold = "each with a fresh cache" if args.cold else "caches warm"
    print(f"matrix {' '.join(argv[1:])}: {args.runs} runs each, alternating, {cold}; every JSON output identical\n")
    print("| tree | peak RSS MB (median, range) | CPU s (median, range) |")
    print("|---|---|---|")
    base = statistics.median(r for _, r in next(iter(figures.values())))
    for name, runs in figures.items():
        rss, cpu = [r for _, r in runs], [c for c, _ in runs]
        print(
            f"| {name} | {statistics.median(rss):.0f} ({min(rss):.0f}-{max(rss):.0f}), "
            f"x{statistics.median(rss) / base:.2f} | {statistics.median(cpu):.1f} ({min(cpu):.1f}-{max(cpu):.1f}) |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
