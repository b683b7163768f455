"""validate's host preflight before and after issue 22 (requirement 6: <= 5 s before Ray starts).

The host side of validate's preflight is ``python -m patchctl.validate.host preflight`` run in
the tree with the cluster's interpreter. It is timed here as a whole cold process (start to
exit), as a host runs it, for two versions of patchctl's package:

  before   the package at BASELINE (default 862e361, the commit issue 22 started from): torch,
           vLLM, flash-attn and verl are imported in probe subprocesses
  after    this checkout's package: found in their dist-info, not imported (validate/host/found.py)

Alternating, after one warm-up run of each (page cache); the figure is the median. The host's
answer is checked too: both must give the same verdict per check, or the row says which differ.

    python benchmarks/bench_host_preflight.py --tree VERL_TREE [--python PY] [--runs N] [--skip a,b]

PY is the interpreter verl is installed in (default: this one). ``--skip`` leaves checks out as
``preflight_skip`` does (e.g. ``patches`` for a tree with no apply record).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def baseline_src(ref: str, into: Path) -> Path:
    """The package at ``ref``, extracted from git (``git archive``), as the hosts would receive it."""
    archive = into / "src.tar"
    subprocess.run(["git", "-C", str(REPO), "archive", "-o", str(archive), ref, "src/patchctl"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def once(python: str, src: Path, tree: Path, skip: list[str]) -> tuple[float, dict[str, str]]:
    request = {"run": "bench", "address": "127.0.0.1", "skip": {s: "bench --skip" for s in skip}}
    # the package first, then whatever the caller's path holds (a bundle of Ray and vLLM, say)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")]))}
    start = time.perf_counter()
    done = subprocess.run(
        [python, "-m", "patchctl.validate.host", "preflight"],
        input=json.dumps(request) + "\n",
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=600,
    )
    seconds = time.perf_counter() - start
    for line in reversed(done.stdout.splitlines()):
        doc = json.loads(line)
        if doc.get("event") == "reply":
            return seconds, {r["check"]: r["status"] for r in doc["rows"]}
    raise SystemExit(f"the host preflight gave no answer (exit {done.returncode}): {done.stderr[-800:]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", type=Path, required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--baseline", default="862e361")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--skip", default="")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    skip = [s for s in args.skip.split(",") if s]
    with tempfile.TemporaryDirectory(prefix="bench-hostpf-") as tmp:
        variants = {
            f"before ({args.baseline})": baseline_src(args.baseline, Path(tmp)),
            "after (this tree)": REPO / "src",
        }
        times: dict[str, list[float]] = {k: [] for k in variants}
        verdicts: dict[str, dict[str, str]] = {}
        for src in variants.values():  # warm-up: page cache, __pycache__
            once(args.python, src, args.tree.resolve(), skip)
        for _ in range(args.runs):
            for name, src in variants.items():
                seconds, verdicts[name] = once(args.python, src, args.tree.resolve(), skip)
                times[name].append(seconds)
    before, after = verdicts.values()
    differ = sorted(k for k in before if before.get(k) != after.get(k))
    print(
        f"host preflight (python -m patchctl.validate.host preflight), {args.tree}, {args.python}, "
        f"{args.runs} runs each"
    )
    print(f"{'variant':<24} {'median s':>9} {'min s':>7} {'max s':>7}")
    for name, ts in times.items():
        print(f"{name:<24} {statistics.median(ts):>9.2f} {min(ts):>7.2f} {max(ts):>7.2f}")
    print(
        "same verdict per check: "
        + ("yes" if not differ else "no: " + ", ".join(f"{k} {before.get(k)} -> {after.get(k)}" for k in differ))
    )
    if args.json:
        args.json.write_text(json.dumps({"times": times, "verdicts": verdicts, "differ": differ}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
