"""What a run's GPU claim (gpulease.py) costs: claim + release, and a refused claim, with N live
claims of other runs in the folder (each a real process holding its flock), in milliseconds.

    python benchmarks/bench_gpulease.py [--repeat 200]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from patchctl import gpulease
from patchctl.gpulease import Gpu, Owner

HOLDER = """
import sys
from patchctl.gpulease import Gpu, Owner, acquire
leases = [acquire(Owner(f"other{i}", "patchctl train", "/runs/x", "box", (Gpu(str(i), f"GPU-{i}"),), False))
          for i in range(int(sys.argv[1]))]
print("held", flush=True)
sys.stdin.read()
"""


def _ms(fn: object, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), max(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    rows = []
    for others in (0, 10, 100):
        folder = tempfile.mkdtemp(prefix="bench-leases-")
        os.environ[gpulease.LEASES_ENV] = folder
        src = str(Path(gpulease.__file__).resolve().parents[1])
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(others)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": src},
        )
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        free = Owner("me", "patchctl train", "/runs/me", "box", (Gpu("999", "GPU-free"),), False)
        taken = Owner("me", "patchctl train", "/runs/me", "box", (Gpu("0", "GPU-0"),), False)

        def claim_release(free: Owner = free) -> None:
            lease = gpulease.acquire(free)
            assert lease is not None
            lease.release()

        def refused(taken: Owner = taken) -> None:
            try:
                gpulease.acquire(taken)
            except gpulease.Refused:
                return
            raise AssertionError("not refused")

        ok = _ms(claim_release, args.repeat)
        no = _ms(refused, args.repeat) if others else (float("nan"), float("nan"))
        rows.append((others, *ok, *no))
        holder.stdin.close() if holder.stdin else None
        holder.wait()
        shutil.rmtree(folder)
    print(f"{'live claims':>11} | {'claim+release ms (median / max)':>32} | {'refused ms (median / max)':>26}")
    for n, a, b, c, d in rows:
        print(f"{n:>11} | {a:>15.3f} / {b:<14.3f} | {c:>12.3f} / {d:<11.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
