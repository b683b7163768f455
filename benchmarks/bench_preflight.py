"""`patchctl verify --env` beside the patchset's test_components.py, side by side on one machine.

test_components.py (shipped by the uky patchset) checks torch+CUDA, the data files, the vLLM
import, the verl import and a Ray start one after another in one process. patchctl runs each
heavy check in its own subprocess, all at once. Both are timed as whole cold processes (start to
exit), alternating, after one warm-up run of each (page cache); the figure is the median.

Rows:
  test_components.py          the 5 checks, sequential, one process
  patchctl, same 5 checks     torch, data, vllm, verl, ray through patchctl's runner
  patchctl verify --env       all 17 checks, the CLI
  floor: import verl alone    `python -c "import verl"` in the tree: no design that really imports
                              verl in a fresh process can finish sooner than this

    python benchmarks/bench_preflight.py --tree VERL_TREE [--data-dir DIR] [--runs N] [--json OUT]

VERL_TREE is a verl tree; when it has no test_components.py at its root (the uky patchset adds
it), a temporary directory holds the shipped script beside a link to the tree's verl package.
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
import time
from pathlib import Path

SHIPPED = Path(__file__).resolve().parents[1] / "src/patchctl/patchsets/builtin/uky/files/test_components.py"
SAME_FIVE = ("torch", "data", "vllm", "verl", "ray")
SUBSET = (
    "import json, sys; from patchctl.target import open_tree; from patchctl.preflight import build, run; "
    "from pathlib import Path; r = run(build(open_tree(Path(sys.argv[1]))), only=sys.argv[2].split(',')); "
    "print(json.dumps({'seconds': r.seconds, 'checks': [c.to_json() for c in r.results]}))"
)


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, dict]:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    try:
        doc = json.loads(done.stdout)
    except ValueError:
        doc = {"error": (done.stderr or done.stdout)[-2000:], "rc": done.returncode}
    return seconds, doc


def script_dir(tree: Path, scratch: Path) -> Path:
    if (tree / "test_components.py").is_file():
        return tree
    (scratch / "verl").symlink_to(tree / "verl")
    shutil.copy(SHIPPED, scratch / "test_components.py")
    return scratch


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, required=True)
    ap.add_argument("--data-dir", default=os.environ.get("DATA_DIR", ""))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", dest="out", type=Path)
    args = ap.parse_args()
    tree = args.tree.resolve()
    env = dict(os.environ)
    if args.data_dir:
        env["DATA_DIR"] = args.data_dir  # both read it: test_components.py directly, patchctl as a path setting
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        where = script_dir(tree, Path(tmp))
        commands = {
            "test_components.py (5 checks, sequential)": [py, str(where / "test_components.py"), "--json"],
            "patchctl, same 5 checks (parallel)": [py, "-c", SUBSET, str(tree), ",".join(SAME_FIVE)],
            "patchctl verify --env (17 checks, parallel)": [
                py,
                "-c",
                "from patchctl.cli.main import main; main()",
                "verify",
                "--env",
                "--json",
                "--target",
                str(tree),
            ],
            "floor: python -c 'import verl' alone": [py, "-c", "import verl, json; print(json.dumps({}))"],
        }
        times: dict[str, list[float]] = {k: [] for k in commands}
        last: dict[str, dict] = {}
        for argv in commands.values():  # warm-up: page cache, .pyc files
            timed(argv, env, tree)
        for _ in range(args.runs):
            for name, argv in commands.items():
                seconds, doc = timed(argv, env, tree)
                times[name].append(seconds)
                last[name] = doc
    for name, doc in last.items():
        if "error" in doc:
            print(f"{name}: did not produce JSON (rc {doc['rc']}): {doc['error']}", file=sys.stderr)
    base = statistics.median(times[next(iter(commands))])
    print(f"{'command':<46} {'median':>8} {'min':>8} {'max':>8} {'vs test_components':>19}")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"{name:<46} {med:>7.2f}s {min(values):>7.2f}s {max(values):>7.2f}s {med / base:>18.0%}")
    print("\nper check (last run), seconds:")
    tc = {c["name"]: c for c in last[next(iter(commands))].get("checks", [])}
    pc = {c["name"]: c for c in last["patchctl verify --env (17 checks, parallel)"].get("checks", [])}
    pairs = {"torch_cuda": "torch", "data_files": "data", "vllm": "vllm", "verl": "verl", "ray": "ray"}
    for tname, pname in pairs.items():
        t, p = tc.get(tname, {}), pc.get(pname, {})
        print(
            f"  {pname:<6} test_components {t.get('seconds', float('nan')):>6.2f}s "
            f"{'PASS' if t.get('ok') else 'FAIL'}   patchctl {p.get('seconds', float('nan')):>6.2f}s "
            f"{p.get('status', '?')}"
        )
    if args.out:
        args.out.write_text(json.dumps({"runs": args.runs, "times": times, "last": last}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
