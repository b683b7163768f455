"""Cold-process `patchctl capture` of a verl-sized fork, beside the by-hand way of finding its edits.

The fork is verl 0.6.1 (about 800 files) with the `uky` patchset applied and the hand edits of
tests/capture/forkmaker.py (a changed default argument, a new helper function, an extra import,
an edited line in a method, a new script). Each figure is the median wall time of N fresh
processes, the release already cached. Rows:

- `patchctl capture` against BASE as a directory, and as `verl==0.6.1` (which also unpacks the
  release's sdist into a scratch directory);
- the baseline the record uses today, which only *finds* the edits: `diff -ruN BASE FORK` plus
  `grep -rn "# Uky" FORK` (capture also classifies, writes and proves the patchset).

    python benchmarks/bench_capture.py [--runs N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.capture.forkmaker import make_fork

from patchctl import releases

GOAL_S = 3.0


def timed(argv: list[str], ok: tuple[int, ...] = (0,)) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode not in ok:
        raise SystemExit(f"{argv[:3]} failed ({done.returncode}): {done.stderr[-1000:]}")
    return seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    patchctl = str(Path(sys.executable).with_name("patchctl"))
    with tempfile.TemporaryDirectory(prefix="bench-capture-") as tmp:
        t = Path(tmp)
        base = releases.pristine("0.6.1", t / "b")
        fork = releases.pristine("0.6.1", t / "f")
        subprocess.run([patchctl, "apply", "--target", str(fork)], check=True, capture_output=True)
        make_fork(fork)
        files = sum(1 for p in fork.rglob("*") if p.is_file())
        rows = {
            "patchctl capture --base DIR": lambda i: timed(
                [patchctl, "capture", "--from", str(fork), "--base", str(base), "--out", str(t / f"o{i}")]
            ),
            "patchctl capture --base verl==0.6.1": lambda i: timed(
                [patchctl, "capture", "--from", str(fork), "--base", "verl==0.6.1", "--out", str(t / f"r{i}")]
            ),
            "baseline: diff -ruN + grep -rn (finds only)": lambda i: (
                timed(["diff", "-ruN", str(base), str(fork)], ok=(1,)) + timed(["grep", "-rn", "# Uky", str(fork)])
            ),
        }
        times: dict[str, list[float]] = {name: [] for name in rows}
        for fn in rows.values():
            fn(-1)  # warm-up: page cache, bytecode
        for i in range(args.runs):
            for name, fn in rows.items():
                times[name].append(fn(i))
                shutil.rmtree(t / f"o{i}", ignore_errors=True)
                shutil.rmtree(t / f"r{i}", ignore_errors=True)
    print(f"fork: verl 0.6.1 + uky + hand edits, {files} files; median of {args.runs} cold runs\n")
    print(f"{'command':<46} {'median':>8} {'min':>8} {'max':>8}  goal")
    for name, values in times.items():
        goal = f"<= {GOAL_S:.0f} s" if name.startswith("patchctl") else ""
        print(f"{name:<46} {statistics.median(values):>7.2f}s {min(values):>7.2f}s {max(values):>7.2f}s  {goal}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
