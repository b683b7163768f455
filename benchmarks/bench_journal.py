"""What crash safety costs: the journaled ``write_all`` beside a plain temp-file-and-rename loop.

Both write the same new files (half of them replacing existing ones) into a scratch tree, in
one process, alternating, median of N runs; the tree is reset between runs (not timed). The
baseline is what ``write_all`` did before the journal: stage every file with fsync, then rename.

    python benchmarks/bench_journal.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

from patchctl.fsutil import FileChange, write_all


def changes(n: int) -> list[FileChange]:
    return [FileChange(f"d{i % 7}/f{i:04d}.txt", f"new content {i}\n".encode() * 20, 0o644) for i in range(n)]


def reset(root: Path, n: int) -> None:
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    for i in range(0, n, 2):  # every other file exists already: a replace, not a create
        (root / f"d{i % 7}").mkdir(exist_ok=True)
        (root / f"d{i % 7}/f{i:04d}.txt").write_bytes(b"old\n")


def plain(root: Path, items: list[FileChange]) -> None:
    staged = []
    for ch in items:
        dest = root / ch.path
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.tmp")
        with open(tmp, "wb") as f:
            f.write(ch.content or b"")
            f.flush()
            os.fsync(f.fileno())
        staged.append((tmp, dest))
    for tmp, dest in staged:
        os.replace(tmp, dest)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    print(f"{'files':>6} {'plain rename s':>15} {'journaled s':>12} {'ratio':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        for n in (14, 300):
            items = changes(n)
            times: dict[str, list[float]] = {"plain": [], "journal": []}
            for _ in range(args.runs):
                for name, fn in (("plain", partial(plain, root, items)), ("journal", partial(write_all, root, items))):
                    reset(root, n)
                    start = time.perf_counter()
                    fn()
                    times[name].append(time.perf_counter() - start)
            p, j = statistics.median(times["plain"]), statistics.median(times["journal"])
            print(f"{n:>6} {p:>15.4f} {j:>12.4f} {j / p:>6.2f}x")


if __name__ == "__main__":
    main()
