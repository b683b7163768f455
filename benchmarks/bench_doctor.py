"""`patchctl doctor` against the corpus of real failures and against long lines, beside a previous version.

The previous version is the whole ``patchctl`` package of a git ref (default ``main``), extracted with
``git archive``; each column runs in a child process of this script with its tree's ``src`` first on
the path, one after the other, so both share machine and load and each runs its own scan, reader,
version finder and signature table. Figures:
- coverage (correct or partial over all entries), precision (of the claimed findings, how many
  are right), the wrong count: on the excerpts the patterns were written from, on the third held
  back while they were written, on the blind ones collected after the patterns were frozen, and on
  issue 37's held-out half ("unseen": split off before its signatures were written)
  (``tests/doctor/corpus``, scored by ``tests/doctor/corpus_score.py``);
- the fault-injection set (``benchmarks/doctor_faults.py``, issue 37 req. 6), made once by this
  branch and scored by both columns: hangs planted in a rank and really run and stopped, a real NCCL
  hang's flight recorder dumps, a host of three with another package version, NCCL over sockets, an
  Xid, another driver or slower steps, a real tiny GRPO run whose reward function returns 0, the
  validation's sabotaged reports; each with a control that has no fault. Per category: top-1
  accuracy (the first finding is the expected one; a control's is none), wrong (a finding that is
  not the expected one, or any on a control), none (a fault with no finding); ms per case;
- ms/log: the median time to diagnose one corpus entry (N rounds over the corpus);
- a 55 MB log (our vLLM run's log repeated, ending in a KV-cache error) read through ``open_log``:
  wall time (median of N) and peak Python memory (tracemalloc, a separate pass);
- issue 41's long lines, through ``diagnose``: an OOM line ending in a run of ``[`` and a line of
  ``NET/Socket `` repeated, at the reported sizes and at 1 MB; the slowest of every regex doctor
  applies to a line (``re.search``) on the adversarial lines ``tests/doctor/backtrack.py`` builds
  from it, at 1 MB; and a 100 MB log without a newline (time, peak memory). A case whose time
  grows faster than linearly is not run at 1 MB: "est." extrapolates from 16 KB and 64 KB with the
  measured exponent (t ~ n^k), which is printed with it.

    python benchmarks/bench_doctor.py [--base main | --base-src DIR] [--rounds 5]

``--base-src`` names the ``src`` directory of an extracted tree instead (where there is no git history).
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "doctor"))

import backtrack  # noqa: E402 - found through the sys.path entry above
import corpus_score  # noqa: E402 - as above

import doctor_faults  # noqa: E402 - beside this file

BIG_MB = 55
#: the log without newlines, in MB
LINE_MB = 100
#: written from, held back while writing, collected after the patterns were frozen, and issue 37's
#: held-out half (no signature was written from it)
SPLITS = ("written", "held", "blind", "unseen")
RUN_LOG = ROOT / "docs/validation/vllm/runs/a-debug-train-excerpt.log"
TAIL = (
    "(EngineCore_DP0 pid=223840) ERROR 10-25 13:08:43 [core.py:708] ValueError: No available memory for the cache "
    "blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n"
)
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB "
KB, MB = 1024, 2**20
#: a case estimated to take longer than this at 1 MB is extrapolated, not run
RUN_LIMIT_S = 20.0
#: issue 41's cases: (label, line of about n characters, the size the issue reported)
CASES: list[tuple[str, Callable[[int], str], int]] = [
    ("OOM line ending in '[' * n", lambda n: OOM + "[" * n, 100 * KB),
    ("'NET/Socket ' * n/11", lambda n: "NET/Socket " * (n // 11), 200 * KB),
]


# --- a column: runs in a child process, with the measured tree's src first on sys.path ------------


def _timed(fn: Callable[[], Any], rounds: int = 1) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def at_1mb(run: Callable[[int], float]) -> dict[str, Any]:
    """Seconds at 1 MB, measured, or extrapolated from 16 and 64 KB when that would take too long."""
    small, large = run(16 * KB), run(64 * KB)
    k = math.log(max(large, 1e-6) / max(small, 1e-6), 4)
    estimate = large * 16 ** max(k, 1.0)
    if estimate > RUN_LIMIT_S:
        return {"s": estimate, "estimated": True, "k": k}
    return {"s": run(MB), "estimated": False, "k": k}


def slowest_regex(signatures: list[Any]) -> dict[str, Any]:
    """The regex and adversarial line that take longest at 16 KB, then 1 MB on the worst few."""
    timed = []
    for where, pattern in backtrack.doctor_regexes(signatures):
        for head, piece in backtrack.fragments(pattern):
            text = backtrack.line(head, piece, 16 * KB)
            timed.append((_timed(lambda p=pattern, t=text: p.search(t)), where, pattern, head, piece))
    timed.sort(key=lambda t: t[0], reverse=True)
    best: dict[str, Any] = {"s": -1.0}
    for _, where, pattern, head, piece in timed[:3]:
        got = at_1mb(lambda n, p=pattern, h=head, f=piece: _timed(lambda: p.search(backtrack.line(h, f, n))))
        if got["s"] > best["s"]:
            best = {**got, "regex": where, "line": f"{(head + piece)[:24]!r}..."}
    return best


def measure(big: Path, long_line: Path, rounds: int, faults: Path) -> dict[str, Any]:
    from patchctl.doctor import diagnose, load_signatures, open_log

    signatures = load_signatures()
    out_faults = doctor_faults.score(json.loads(faults.read_text(encoding="utf-8")), signatures)

    def fn(lines: Any) -> Any:
        return diagnose(lines, signatures)

    out: dict[str, Any] = {"faults": out_faults}
    entries = corpus_score.load()
    for split in SPLITS:
        out[split] = corpus_score.summary(corpus_score.score([e for e in entries if e.split == split], fn))
    per_log = []
    for _ in range(rounds):
        for e in entries:
            lines = e.lines
            start = time.perf_counter()
            fn(lines)
            per_log.append(time.perf_counter() - start)
    out["ms_per_log"] = statistics.median(per_log) * 1000

    def from_file(path: Path) -> Any:
        with open_log(path) as reader:
            return fn(reader)

    found = from_file(big).matches
    out["big_root"] = found[0].signature.id if found else "(none)"
    out["big_s"] = _timed(lambda: from_file(big), rounds)
    out["big_peak_mb"] = _peak(lambda: from_file(big))
    for i, (_label, make, reported) in enumerate(CASES):
        out[f"case{i}_reported_s"] = _timed(lambda m=make, r=reported: fn([m(r)]))
        out[f"case{i}_1mb"] = at_1mb(lambda n, m=make: _timed(lambda: fn([m(n)])))
    out["slowest"] = slowest_regex(signatures)
    out["line_s"] = _timed(lambda: from_file(long_line))
    out["line_peak_mb"] = _peak(lambda: from_file(long_line))
    return out


def _peak(fn: Callable[[], Any]) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / MB
    finally:
        tracemalloc.stop()


# --- the parent: sets up the inputs, runs the columns, prints the table ----------------------------


def big_log(path: Path) -> Path:
    chunk = RUN_LOG.read_text(encoding="utf-8")
    with path.open("w", encoding="utf-8") as f:
        for _ in range(BIG_MB * MB // len(chunk.encode()) + 1):
            f.write(chunk)
        f.write(TAIL)
    return path


def one_line_log(path: Path) -> Path:
    with path.open("w", encoding="utf-8") as f:
        f.write(OOM)
        for _ in range(LINE_MB):
            f.write("x" * MB)
        f.write("\n")
    return path


def tree_of(ref: str, into: Path) -> Path:
    """The src directory of ``ref``'s patchctl package, extracted under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref, "src/patchctl"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")  # this repository's own tree at another commit
    return into / "src"


def column(src: Path, big: Path, long_line: Path, rounds: int, faults: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, __file__, "--measure", str(src), str(big), str(long_line), str(faults)]
    cmd += ["--rounds", str(rounds)]
    got = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    result: dict[str, Any] = json.loads(got.stdout)
    return result


def _seconds(m: dict[str, Any]) -> str:
    return f"est. {m['s']:.0f} (n^{m['k']:.1f})" if m["estimated"] else f"{m['s']:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="main", help="the git ref whose doctor is the baseline")
    ap.add_argument("--base-src", type=Path, help="the src directory of the baseline's tree, instead of --base")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--measure", nargs=4, metavar=("SRC", "BIG", "LINE", "FAULTS"), help=argparse.SUPPRESS)
    ap.add_argument("--build-faults", metavar="DIR", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:  # a child: one column
        src, big, long_line, faults = args.measure
        sys.path.insert(0, src)
        print(json.dumps(measure(Path(big), Path(long_line), args.rounds, Path(faults))))
        return 0
    if args.build_faults:  # a child with this branch's src: the fault-injection set, made once for both columns
        sys.path.insert(0, str(ROOT / "src"))
        print(json.dumps(doctor_faults.build(Path(args.build_faults))))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        big = big_log(Path(tmp) / "train.log")
        long_line = one_line_log(Path(tmp) / "dump.log")
        base = args.base_src.resolve() if args.base_src else tree_of(args.base, Path(tmp) / "base")
        faults = build_faults(Path(tmp) / "faults")
        cols = {
            f"previous ({args.base_src or args.base})": column(base, big, long_line, args.rounds, faults),
            "this branch": column(ROOT / "src", big, long_line, args.rounds, faults),
        }
        cases = json.loads(faults.read_text(encoding="utf-8"))
        size = big.stat().st_size / MB
    entries = corpus_score.load()
    n = {split: sum(1 for e in entries if e.split == split) for split in SPLITS}
    print(
        f"doctor on {len(entries)} corpus entries ({n['written']} written from, {n['held']} held back, "
        f"{n['blind']} blind, {n['unseen']} held out of issue 37's); a {size:.0f} MB log; "
        f"median of {args.rounds}; long lines: 1 run each"
    )
    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        (f"{split}: {k}", lambda c, split=split, k=k: _fmt(c[split][k]))
        for split in SPLITS
        for k in ("coverage", "precision", "correct", "partial", "none", "wrong")
    ]
    categories = [*list(dict.fromkeys(c["category"] for c in cases)), "all"]
    n_cases = {k: sum(1 for c in cases if k in (c["category"], "all")) for k in categories}
    for k in categories:
        rows += [
            (f"faults, {k} ({n_cases[k]}): top-1", lambda c, k=k: _fault(c, k, "top1")),
            (f"faults, {k}: wrong", lambda c, k=k: _fault(c, k, "wrong")),
            (f"faults, {k}: none", lambda c, k=k: _fault(c, k, "none")),
        ]
    rows += [("faults: ms per case", lambda c: _fault(c, "all", "ms_per_case"))]
    rows += [
        ("ms per log", lambda c: f"{c['ms_per_log']:.2f}"),
        (f"{size:.0f} MB log: seconds", lambda c: f"{c['big_s']:.2f}"),
        (f"{size:.0f} MB log: peak MB (tracemalloc)", lambda c: f"{c['big_peak_mb']:.1f}"),
        (f"{size:.0f} MB log: top finding", lambda c: c["big_root"]),
    ]
    for i, (label, _make, reported) in enumerate(CASES):
        rows += [
            (f"{label}, n={reported // KB} KB: seconds", lambda c, i=i: f"{c[f'case{i}_reported_s']:.2f}"),
            (f"{label}, n=1 MB: seconds", lambda c, i=i: _seconds(c[f"case{i}_1mb"])),
        ]
    rows += [
        ("slowest regex, 1 MB adversarial line: seconds", lambda c: _seconds(c["slowest"])),
        ("  that regex", lambda c: c["slowest"]["regex"]),
        ("  its line", lambda c: c["slowest"]["line"]),
        (f"{LINE_MB} MB line without newline: seconds", lambda c: f"{c['line_s']:.2f}"),
        (f"{LINE_MB} MB line without newline: peak MB", lambda c: f"{c['line_peak_mb']:.1f}"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'':<{width}}  " + "  ".join(f"{name:>30}" for name in cols))
    for label, cell in rows:
        print(f"{label:<{width}}  " + "  ".join(f"{cell(c):>30}" for c in cols.values()))
    for name, c in cols.items():  # each fault the column got wrong or missed, by name
        for miss in c["faults"].get("all", {}).get("misses", []):
            print(f"{name}: missed {miss}")
    return 0


def build_faults(into: Path) -> Path:
    """The fault-injection set, made by this branch (its hang capture and jobs), as a JSON file."""
    into.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    got = subprocess.run(
        [sys.executable, __file__, "--build-faults", str(into)], check=True, capture_output=True, text=True, env=env
    )
    path = into / "cases.json"
    path.write_text(got.stdout, encoding="utf-8")
    return path


def _fault(c: dict[str, Any], category: str, key: str) -> str:
    row = c["faults"].get(category)
    if row is None:
        return "-"
    return f"{row[key]:.2f}" if key == "ms_per_case" else _fmt(row[key])


def _fmt(v: float) -> str:
    return f"{v:.0%}" if isinstance(v, float) else str(v)


if __name__ == "__main__":
    sys.exit(main())
