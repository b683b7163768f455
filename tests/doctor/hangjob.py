"""A tiny "distributed" job that really hangs: the fault planted in one rank (issue 37's tests and
benchmarks/bench_doctor.py's fault-injection set).

``python hangjob.py WORKDIR RANKS HANG_RANK HANG_STEP`` starts RANKS rank processes (each with
``RANK`` in its environment, as verl's workers have) and prints a verl-style step line each time
all ranks pass the step's barrier. A rank's ``all_reduce`` writes its marker for the step and waits
for every other rank's: the barrier a collective is. At step HANG_STEP the rank HANG_RANK calls a
reward function that never returns (``-1``: no rank hangs), so every other rank waits in
``all_reduce`` and the driver waits for them: a run that stopped making progress, with no error.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

#: steps a run without a hang makes
STEPS = int(os.environ.get("HANGJOB_STEPS", "6"))


def all_reduce(workdir: Path, step: int, rank: int, ranks: int) -> None:
    (workdir / f"step{step}-rank{rank}").touch()
    while not all((workdir / f"step{step}-rank{r}").exists() for r in range(ranks)):
        time.sleep(0.02)


def compute_reward(step: int) -> float:
    while True:  # the planted fault: a reward function stuck (a remote judge that never answers)
        time.sleep(0.05)


def rank_main(workdir: Path, ranks: int, hang_rank: int, hang_step: int) -> None:
    rank = int(os.environ["RANK"])
    for step in range(1, STEPS + 1):
        if rank == hang_rank and step == hang_step:
            compute_reward(step)
        all_reduce(workdir, step, rank, ranks)
        if rank == 0:
            print(f"rank0 done {step}", flush=True)


def driver(workdir: Path, ranks: int, hang_rank: int, hang_step: int) -> int:
    workdir.mkdir(parents=True, exist_ok=True)
    children = [
        subprocess.Popen(
            [sys.executable, __file__, "--rank", str(workdir), str(ranks), str(hang_rank), str(hang_step)],
            env={**os.environ, "RANK": str(r), "WORLD_SIZE": str(ranks)},
            stdout=subprocess.PIPE if r == 0 else subprocess.DEVNULL,
            text=True,
        )
        for r in range(ranks)
    ]
    print(f"(TaskRunner pid={os.getpid()}) Started {ranks} ranks", flush=True)
    start = time.monotonic()
    assert children[0].stdout is not None
    for line in children[0].stdout:
        step = int(line.split()[-1])
        print(f"step:{step} - critic/score/mean:0.5 - timing_s/step:{time.monotonic() - start:.3f}", flush=True)
        start = time.monotonic()
    return max(c.wait() for c in children)


if __name__ == "__main__":
    if sys.argv[1] == "--rank":
        rank_main(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(driver(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
