"""What the code hook costs each process of a run: interpreter start-up and imports, with and without it.

Every Python process of a ``patchctl train`` run whose tree has code patches loads the hook
(``train/hook_site.py`` as ``sitecustomize``): a finder first on ``sys.meta_path`` that every
import passes through, and a record written when a watched module runs. Three commands, each
run alternately with the hook and without it (the baseline: the same ``PYTHONPATH`` minus the
hook folder), median and 90th percentile of N runs in fresh interpreters:

- ``start``: ``python -c pass`` (the hook loads, nothing is watched that gets imported);
- ``imports``: ``import`` of a large package set (``--heavy``, default pandas and pyarrow: some
  hundreds of modules, each asking the finder once), no watched module among them;
- ``record``: a tree's patched module and ``verl`` (two records written).

    python benchmarks/bench_codehook.py [--runs N] [--python PATH] [--heavy "import x, y"]

On a GPU host pass ``--python`` the trainer's interpreter and ``--heavy "import torch, vllm"``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from patchctl.train import codehook

MODULE = "verl.workers.rollout.vllm_rollout"


def tree(root: Path) -> Path:
    for rel in ("verl/__init__.py", "verl/workers/__init__.py", "verl/workers/rollout/__init__.py",
                "verl/workers/rollout/vllm_rollout/__init__.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    return root


def timed(python: str, code: str, env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([python, "-c", code], env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--heavy", default="import pandas, pyarrow.parquet")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = tree(Path(tmp) / "tree")
        run_dir = Path(tmp) / "run"
        codehook.install(run_dir)
        watch = (codehook.Watch("uky", "p", MODULE, "verl/workers/rollout/vllm_rollout/__init__.py"),)
        base = {k: v for k, v in os.environ.items() if not k.startswith("PATCHCTL_CODEHOOK")}
        without = {**base, "PYTHONPATH": str(root)}
        with_hook = {**base, **codehook.env(run_dir, watch),
                     "PYTHONPATH": os.pathsep.join([str(root), str(run_dir / codehook.DIR_NAME)])}
        cases = {"start": "pass", "imports": args.heavy, "record": f"import {MODULE}"}
        print(f"{'case':<8} {'without ms (p50/p90)':>22} {'with hook ms (p50/p90)':>24} {'overhead ms':>12} "
              f"{'overhead':>9}")
        for name, code in cases.items():
            times: dict[str, list[float]] = {"without": [], "with": []}
            timed(args.python, code, without, root)  # warm the page cache and byte-code
            timed(args.python, code, with_hook, root)
            for _ in range(args.runs):
                times["without"].append(timed(args.python, code, without, root))
                times["with"].append(timed(args.python, code, with_hook, root))
            w = [1000 * t for t in times["without"]]
            h = [1000 * t for t in times["with"]]
            p50w, p50h = statistics.median(w), statistics.median(h)
            p90w, p90h = statistics.quantiles(w, n=10)[-1], statistics.quantiles(h, n=10)[-1]
            print(f"{name:<8} {p50w:>12.1f} / {p90w:<8.1f} {p50h:>13.1f} / {p90h:<8.1f} {p50h - p50w:>12.1f} "
                  f"{100 * (p50h - p50w) / p50w:>8.1f}%")
        records = sorted((run_dir / codehook.DIR_NAME / "records").glob("*.jsonl"))
        print(f"records written by the 'record' runs: {len(records)} files (one per process)")


if __name__ == "__main__":
    main()
