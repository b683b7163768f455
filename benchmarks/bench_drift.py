"""drift, bisect and watch on real verl history, each beside what a user would do without them.

Run by hand (CI has no network and no verl mirror); its output is committed as
benchmarks/results/drift_verl.txt. Needs a verl git repository with its tags (a bare mirror
is fine) and the verl 0.6.1, 0.7.0 and 0.9.1 sdists in the cache (PATCHCTL_CACHE).

    python benchmarks/bench_drift.py --repo /path/to/verl.git [--runs 3]

Each figure is the median wall time of fresh `patchctl` processes. Baselines:

- bisect: the same commits bisect probed, each unpacked whole with `git archive` and planned
  by `patchctl matrix --jobs 1` (what a per-commit tree costs); goal <= 30 s;
- drift: `patchctl matrix` on the same two versions (which shows outcomes only);
- watch: a drift from the base to the branch head (what a scheduled job would run without it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BISECT_GOAL_S = 30.0
PATCH = "vllm-enable-log-requests"


def patchctl(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    return subprocess.run(
        [sys.executable, "-m", "patchctl", *args], capture_output=True, text=True, env=env, check=False
    )


def timed(runs: int, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    times, done = [], None
    for _ in range(runs):
        start = time.perf_counter()
        done = patchctl(*args)
        times.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):
            sys.exit(f"patchctl {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    assert done is not None
    return statistics.median(times), done


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    repo, runs = args.repo, args.runs
    rows = []

    t, done = timed(runs, "bisect", PATCH, "--good", "v0.6.1", "--bad", "v0.7.0", "--repo", repo, "--json")
    found = json.loads(done.stdout)
    commits = ",".join(sha[:12] for sha in found["probed"])
    with tempfile.TemporaryDirectory() as tmp:  # matrix wants a work tree; a shared clone costs no copy
        subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", repo, f"{tmp}/verl"], check=True)
        base, done = timed(1, "matrix", "--repo", f"{tmp}/verl", "--versions", commits, "--jobs", "1", "--json")
    assert len(json.loads(done.stdout)["versions"]) == found["probes"], done.stdout[:500]
    rows.append(
        (
            f"bisect {PATCH} v0.6.1..v0.7.0 ({found['span']} commits, {found['probes']} probed)",
            t,
            f"<= {BISECT_GOAL_S:.0f}",
            base,
            "the same commits as whole trees (matrix --jobs 1)",
        )
    )
    bisect_text = patchctl("bisect", PATCH, "--good", "v0.6.1", "--bad", "v0.7.0", "--repo", repo).stdout

    drifts = {}
    for a, b in (("0.6.1", "0.7.0"), ("0.7.0", "0.9.1")):
        t, done = timed(runs, "drift", "--from", a, "--to", b, "--json")
        drifts[(a, b)] = json.loads(done.stdout)
        base, done = timed(runs, "matrix", "--versions", f"{a},{b}", "--json")
        assert len(json.loads(done.stdout)["versions"]) == 2, done.stdout[:500]
        rows.append((f"drift {a} -> {b} (releases)", t, "-", base, "matrix of the two (outcomes only)"))
    t, _ = timed(runs, "drift", "--repo", repo, "--from", "v0.6.1", "--to", "v0.7.0", "--json")
    rows.append(("drift v0.6.1 -> v0.7.0 (git refs)", t, "-", None, ""))

    t, done = timed(runs, "watch", "--repo", repo, "--since", "v0.7.0", "--json")
    watched = json.loads(done.stdout)
    base, _ = timed(1, "drift", "--repo", repo, "--from", "v0.7.0", "--to", "main", "--json")
    rows.append(
        (f"watch main since v0.7.0 ({watched['commits']} commits)", t, "-", base, "drift v0.7.0 -> main (whole trees)")
    )

    print(f"{'step':<66} {'median s':>9} {'goal s':>7} {'baseline s':>11}  baseline")
    for name, secs, goal, base_s, what in rows:
        print(f"{name:<66} {secs:>9.2f} {goal:>7} {'-' if base_s is None else f'{base_s:.2f}':>11}  {what}")
    print(f"\n(runs: {runs}; {os.cpu_count()} CPUs)\n\n## bisect\n{bisect_text}")
    for (a, b), doc in drifts.items():
        print(f"## drift {a} -> {b}: what changed under each patch (exit {1 if doc['changed'] else 0})")
        for p in doc["patches"]:
            if p["changed"]:
                under = ", ".join(
                    f"{r['what']} {r['name']} {r['status']}"
                    for r in p["regions"]
                    if r["status"] not in ("unchanged", "outside-tree", "absent")
                )
                print(f"- {p['patch']}: {p['outcome']['from']['status']} -> {p['outcome']['to']['status']}; {under}")
                for flag in p["flags"]:
                    print(f"    ! {flag}")
        print()
    first = watched["first"]
    print(
        f"## watch since v0.7.0: first commit under a patch: {first['commit'][:12]} {first['subject']}"
        if first
        else "## watch since v0.7.0: nothing changed"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
