"""`patchctl doctor` against the corpus of real failures, beside the previous version's matcher.

The previous version is the matcher and signature table of a git ref (default ``main``), read with
``git show`` and run in this same process on the same logs, so both columns share machine and load.
Figures:
- coverage (correct or partial over all entries), precision (of the claimed findings, how many
  are right), the wrong count: on the excerpts the patterns were written from, on the third held
  back while they were written, and on the blind ones collected after the patterns were frozen
  (``tests/doctor/corpus``, scored by ``tests/doctor/corpus_score.py``);
- ms/log: the median time to diagnose one corpus entry (N rounds over the corpus);
- a 55 MB log (our vLLM run's log repeated, ending in a KV-cache error) read through ``open_log``:
  wall time (median of N) and peak Python memory (tracemalloc, a separate pass).

    python benchmarks/bench_doctor.py [--base main] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "doctor"))

import corpus_score  # noqa: E402 - found through the sys.path entry above

from patchctl.doctor import diagnose, load_signatures, open_log  # noqa: E402 - as above

BIG_MB = 55
#: written from, held back while writing, collected after the patterns were frozen
SPLITS = ("written", "held", "blind")
RUN_LOG = ROOT / "docs/validation/vllm/runs/a-debug-train-excerpt.log"
TAIL = (
    "(EngineCore_DP0 pid=223840) ERROR 10-25 13:08:43 [core.py:708] ValueError: No available memory for the cache "
    "blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n"
)


def previous(ref: str, tmp: Path) -> Callable[[Any], Any]:
    """The diagnose() of ``ref``, with its own signature table."""

    def show(path: str) -> str:
        return subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{ref}:{path}"], check=True, capture_output=True, text=True
        ).stdout

    module = sys.modules["previous_matcher"] = types.ModuleType("previous_matcher")  # dataclasses look it up
    # this repository's own matcher at another commit, not input from outside
    exec(compile(show("src/patchctl/doctor/matcher.py"), f"{ref}:matcher.py", "exec"), module.__dict__)  # noqa: S102 - see the line above
    table = tmp / "previous_signatures.toml"
    table.write_text(show("src/patchctl/doctor/signatures.toml"), encoding="utf-8")
    sigs = load_signatures(table)
    return lambda lines: module.diagnose(lines, sigs)


def big_log(path: Path) -> Path:
    chunk = RUN_LOG.read_text(encoding="utf-8")
    with path.open("w", encoding="utf-8") as f:
        for _ in range(BIG_MB * 2**20 // len(chunk.encode()) + 1):
            f.write(chunk)
        f.write(TAIL)
    return path


def big_run(fn: Callable[[Any], Any], path: Path) -> Any:
    with open_log(path) as reader:
        return fn(reader)


def measure(fn: Callable[[Any], Any], entries: list[corpus_score.Entry], big: Path, rounds: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for split in SPLITS:
        s = corpus_score.summary(corpus_score.score([e for e in entries if e.split == split], fn))
        out[split] = s
    per_log = []
    for _ in range(rounds):
        for e in entries:
            lines = e.lines
            start = time.perf_counter()
            fn(lines)
            per_log.append(time.perf_counter() - start)
    out["ms_per_log"] = statistics.median(per_log) * 1000
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        found = big_run(fn, big).matches
        root = found[0].signature.id if found else "(none)"
        times.append(time.perf_counter() - start)
    out["big_s"], out["big_root"] = statistics.median(times), root
    tracemalloc.start()
    big_run(fn, big)
    out["big_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="main", help="the git ref whose matcher is the baseline")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    entries = corpus_score.load()
    current = load_signatures()
    with tempfile.TemporaryDirectory() as tmp:
        big = big_log(Path(tmp) / "train.log")
        cols = {
            f"previous ({args.base})": measure(previous(args.base, Path(tmp)), entries, big, args.rounds),
            "this branch": measure(lambda lines: diagnose(lines, current), entries, big, args.rounds),
        }
        size = big.stat().st_size / 2**20
    n = {split: sum(1 for e in entries if e.split == split) for split in SPLITS}
    print(
        f"doctor on {len(entries)} corpus entries ({n['written']} written from, {n['held']} held back, "
        f"{n['blind']} blind); a {size:.0f} MB log; median of {args.rounds}"
    )
    rows = [
        (f"{split}: {k}", lambda c, split=split, k=k: _fmt(c[split][k]))
        for split in SPLITS
        for k in ("coverage", "precision", "correct", "partial", "none", "wrong")
    ]
    rows += [
        ("ms per log", lambda c: f"{c['ms_per_log']:.2f}"),
        (f"{size:.0f} MB log: seconds", lambda c: f"{c['big_s']:.2f}"),
        (f"{size:.0f} MB log: peak MB (tracemalloc)", lambda c: f"{c['big_peak_mb']:.1f}"),
        (f"{size:.0f} MB log: top finding", lambda c: c["big_root"]),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'':<{width}}  " + "  ".join(f"{name:>22}" for name in cols))
    for label, cell in rows:
        print(f"{label:<{width}}  " + "  ".join(f"{cell(c):>22}" for c in cols.values()))
    return 0


def _fmt(v: float) -> str:
    return f"{v:.0%}" if isinstance(v, float) else str(v)


if __name__ == "__main__":
    sys.exit(main())
