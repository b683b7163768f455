"""What the code hook costs each process of a run: interpreter start-up and imports, with and without it.

Every Python process of a ``patchctl train`` run whose tree has code patches loads the hook
(``train/hook_site.py`` as ``sitecustomize``): a finder first on ``sys.meta_path`` that every
import passes through, and a record written when a watched module runs. Three commands, each
run alternately with the hook and without it (the baseline: the same ``PYTHONPATH`` minus the
hook folder), the fastest and the median of N runs in fresh interpreters (the fastest is the
steadier figure on a shared machine; the overhead columns compare it):

- ``start``: ``python -c pass`` (the hook loads, nothing is watched that gets imported);
- ``imports``: ``import`` of a large package set (``--heavy``, default pandas and pyarrow: some
  hundreds of modules, each asking the finder once), no watched module among them;
- ``record``: a tree's patched module and ``verl`` (two records written) in a bare interpreter,
  where the record's own imports (json, threading) are part of the cost;
- ``record*``: the same after ``import json, threading``, as in every verl process (torch imports
  both): the cost of the records themselves.

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
    for rel in (
        "verl/__init__.py",
        "verl/workers/__init__.py",
        "verl/workers/rollout/__init__.py",
        "verl/workers/rollout/vllm_rollout/__init__.py",
    ):
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
        # the caller's PYTHONPATH after the tree: a GPU host's bundle (vLLM, Ray) is found there
        inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        without = {**base, "PYTHONPATH": os.pathsep.join([str(root), *inherited])}
        with_hook = {
            **base,
            **codehook.env(run_dir, watch),
            "PYTHONPATH": os.pathsep.join([str(root), str(run_dir / codehook.DIR_NAME), *inherited]),
        }
        cases = {
            "start": "pass",
            "imports": args.heavy,
            "record": f"import {MODULE}",
            "record*": f"import json, threading; import {MODULE}",
        }
        print(
            f"{'case':<8} {'without ms (min/p50)':>22} {'with hook ms (min/p50)':>24} {'overhead ms':>12} "
            f"{'overhead':>9}"
        )
        for name, code in cases.items():
            times: dict[str, list[float]] = {"without": [], "with": []}
            timed(args.python, code, without, root)  # warm the page cache and byte-code
            timed(args.python, code, with_hook, root)
            for _ in range(args.runs):
                times["without"].append(timed(args.python, code, without, root))
                times["with"].append(timed(args.python, code, with_hook, root))
            w = [1000 * t for t in times["without"]]
            h = [1000 * t for t in times["with"]]
            minw, minh = min(w), min(h)
            print(
                f"{name:<8} {minw:>12.1f} / {statistics.median(w):<8.1f} {minh:>13.1f} / "
                f"{statistics.median(h):<8.1f} {minh - minw:>12.1f} {100 * (minh - minw) / minw:>8.1f}%"
            )
        records = sorted((run_dir / codehook.DIR_NAME / "records").glob("*.jsonl"))
        print(f"records written by the 'record' runs: {len(records)} files (one per process)")


if __name__ == "__main__":
    main()
