"""The start-up of each program patchctl runs on a host, this checkout's beside a baseline's.

On a shared machine of few cores (the bench's loopback hosts run on the source's cores) every
CPU millisecond a host program spends is wall time, and a first migrate starts three of them per
host. Each row is one program as ssh starts it there (``python3 -I -S -c``, the bootstrap that
decodes it), timed from its start to the first byte of its answer (wall) and until it exits (its
CPU seconds, wait4, children included), the versions taking turns run by run:

- agent, nothing to do: started ahead, then not needed (EOF at once); wall and CPU to its exit;
- agent, sealed answer: the prescan order with ``"seal": true`` for a sealed tree of 400 files,
  sent at start, to the one-line answer;
- lock_agent hold: the hold request sent at start, to its ``locked`` line;
- lock_agent transfer: takes the transfer lock and execs ``rsync --version``, to rsync's first
  byte (beside it: ``rsync --version`` alone).

    python benchmarks/bench_host_startup.py [--runs 20] [--baseline main]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_migrate_agent import RULE, agent_program, baseline_src, check, tree

REPO = Path(__file__).resolve().parents[1]
# the interpreter itself: a version manager's shim (pyenv) in front of it costs more than the programs
PYTHON = subprocess.run(
    ["python3", "-c", "import sys; print(sys.executable)"], capture_output=True, text=True
).stdout.strip()


def lock_program(src: Path) -> str:
    """The lock keeper's program under ``src``, in the bootstrap ssh runs it with."""
    code = "from patchctl.remote import lock, ssh; print(ssh._BOOTSTRAP.format(code=lock.agent_b64()))"
    env = dict(os.environ, PYTHONPATH=str(src))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout


def timed(argv: list[str], stdin: bytes) -> tuple[float, float]:
    """(seconds from the start to the first byte out, CPU seconds until exit) of one process fed
    ``stdin`` at once (its stdin then left open until the first byte, then closed)."""
    began = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert p.stdin is not None and p.stdout is not None
    if stdin:
        p.stdin.write(stdin)
        p.stdin.flush()
    else:
        p.stdin.close()
    first = p.stdout.read(1)
    wall = time.perf_counter() - began
    if stdin:
        p.stdin.close()
    p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    if status != 0 or (stdin and not first):
        raise SystemExit(f"{argv[:4]} failed (status {status}, answered {first!r})")
    return wall, usage.ru_utime + usage.ru_stime


def cases(agent: str, locks: str, root: Path) -> dict[str, tuple[list[str], bytes]]:
    seal = {"prescan": {"root": str(root), "rule": RULE, "rehash": False, "seal": True}}
    hold = b"".join(field + b"\0" for field in (str(root).encode(), b"5", b"bench"))  # see lock_agent.request
    transfer = [str(root / ".patchctl" / "transfer.lock"), "rsync", "--version"]
    return {
        "agent, nothing to do (to exit)": ([PYTHON, "-I", "-S", "-c", agent], b""),
        "agent, sealed answer": ([PYTHON, "-I", "-S", "-c", agent], json.dumps(seal).encode() + b"\n"),
        "lock_agent hold": ([PYTHON, "-I", "-S", "-c", locks, "hold"], hold),
        "lock_agent transfer (rsync --version)": ([PYTHON, "-I", "-S", "-c", locks, "transfer", *transfer], b""),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--baseline", default="main", help="the git revision to compare with (default: main)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pcstart-") as tmp_s:
        tmp = Path(tmp_s)
        base = baseline_src(args.baseline, tmp / "base")
        programs = {
            args.baseline: (agent_program(base), lock_program(base), tmp / "tree-base"),
            "this checkout": (agent_program(REPO / "src"), lock_program(REPO / "src"), tmp / "tree"),
        }
        for agent, _, root in programs.values():  # a tree each: a version reads only its own seal
            check(agent, root, tree(root, 400), None)
        time.sleep(0.1)
        runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.runs):
            for name, (agent, locks, root) in programs.items():
                for case, (argv, stdin) in cases(agent, locks, root).items():
                    runs.setdefault((case, name), []).append(timed(argv, stdin))
            runs.setdefault(("rsync --version alone", "-"), []).append(timed(["rsync", "--version"], b""))
        print(
            f"host programs' start-up ({PYTHON}), {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at start; "
            f"median of {args.runs} runs, the versions taking turns"
        )
        print("| program | version | start to first byte ms | CPU ms |")
        print("|---|---|---|---|")
        for (case, name), rows in runs.items():
            wall, cpu = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
            print(f"| {case} | {name} | {wall * 1000:.1f} | {cpu * 1000:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
