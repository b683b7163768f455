"""bench_doctor.py's fault-injection set (issue 37 req. 6): failures the project makes itself, the
way nvidia-resiliency-ext scores its own accuracy, each with the one finding doctor should put first.

- hangs: ``tests/doctor/hangjob.py`` really runs four ranks with one stuck in its reward function,
  and is stopped at its timeout by ``patchctl train``'s own launcher, which takes each process's stacks
  with the real py-spy first; a run of it with no fault is the control. The NCCL flight recorder
  dumps of a real hang on two GPUs (``tests/doctor/runs/nccl-hang``) are one more;
- the odd node: a three-host run directory of real per-host files (``tests/doctor/faultruns.py``),
  one host with another package version, NCCL over sockets, an Xid, another driver or slower steps;
  the same cluster without a fault is the control;
- a reward function returning 0: ``tests/doctor/rewardjob.py`` really trains a tiny GRPO policy with
  it; the same run with the right reward is the control;
- the validation's sabotages: our GPU runs' sabotaged reports (``docs/validation``), and every healthy
  report of them as controls.

:func:`build` makes the cases (in a child with this branch's ``src`` first); :func:`top1` is what the
measured doctor puts first for one case, run in each column's child.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests" / "doctor"
RUNS = ROOT / "docs" / "validation"
#: seconds a planted hang runs before the launcher stops it
HANG_TIMEOUT = 4.0


def _hang(into: Path, rank: int, step: int) -> Path:
    from patchctl.train import launcher

    run = into / (f"hang-rank{rank}-step{step}" if rank >= 0 else "hang-none")
    argv = (sys.executable, str(TESTS / "hangjob.py"), str(run / "work"), "4", str(rank), str(step))
    timeout = HANG_TIMEOUT if rank >= 0 else 120.0
    launcher.execute(launcher.Launch(argv, TESTS, {}, run / "train.log"), time.monotonic(), lambda *_: None, timeout)
    shutil.rmtree(run / "work")
    return run


def build(into: Path) -> list[dict[str, Any]]:
    """The cases: (category, name, path, the expected first finding or None)."""
    sys.path.insert(0, str(TESTS))
    import faultruns
    from test_metrics import HEALTHY, SABOTAGE

    from patchctl.train import hangdump

    cases: list[dict[str, Any]] = []

    def add(category: str, name: str, path: Path, expected: str | None) -> None:
        cases.append({"category": category, "name": name, "path": str(path), "expected": expected})

    if hangdump.pyspy() is not None:
        for rank, step in ((2, 3), (0, 2), (3, 1)):
            add("hang", f"rank {rank} stuck at step {step}", _hang(into, rank, step), f"hang:rank {rank}")
        os.environ["HANGJOB_STEPS"] = "4"
        add("hang", "no fault (control)", _hang(into, -1, 0), None)
    add("hang", "real NCCL hang, flight recorder", TESTS / "runs" / "nccl-hang", "hang:rank 1")
    for fault, host in (
        ("package", "node2"),
        ("transport", "node3"),
        ("xid", "node1"),
        ("driver", "node2"),
        ("slow", "node3"),
    ):
        run = faultruns.cluster(into / f"nodes-{fault}", fault=fault, on=host)
        add("odd node", f"{host}: {fault}", run, f"node-{fault}:{host}")
    add("odd node", "no fault (control)", faultruns.cluster(into / "nodes-healthy"), None)
    for kind, expected in (("zero", "reward-zero"), ("right", None)):
        run = into / f"reward-{kind}"
        subprocess.run([sys.executable, str(TESTS / "rewardjob.py"), str(run), kind], check=True)
        add("reward 0", f"reward function {'returns 0' if kind == 'zero' else 'right (control)'}", run, expected)
    for rel, expected in SABOTAGE.items():
        add("sabotage", rel.split("/")[-1].removesuffix("-report.json"), RUNS / rel, expected)
    for path in HEALTHY:
        add("sabotage", f"healthy {path.parent.name}/{path.name} (control)", path, None)
    return cases


def top1(path: Path, signatures: list[Any]) -> str | None:
    """What the measured doctor puts first for a case: the rank the others wait for, the host that
    differs, the metrics' first finding, or a log's root cause; None when it finds nothing."""
    from patchctl.doctor import metrics

    if path.is_file():  # a report.json
        found = metrics.diagnose_metrics(metrics.load_report(path)[1])
        return found[0].id if found else None
    try:
        from patchctl.doctor import rundir
    except ImportError:  # a doctor without run directories reads only their report
        if (path / "report.json").is_file():
            return top1(path / "report.json", signatures)
        return None
    run = rundir.read(path, signatures)
    if run.hang is not None and (who := run.hang.culprit_ranks()):
        return f"hang:{who[0]}"
    if run.nodes:
        return f"{run.nodes[0].id}:{','.join(run.nodes[0].hosts)}"
    if run.report is not None:
        found = metrics.diagnose_metrics(metrics.load_report(run.report)[1])
        if found:
            return found[0].id
    roots = [d.matches[0].signature.id for d in run.logs if d.matches]
    return roots[0] if roots else None


def score(cases: list[dict[str, Any]], signatures: list[Any]) -> dict[str, dict[str, Any]]:
    """Per category (and "all"): cases, correct (top-1), wrong (a finding that is not the expected
    one, or any finding on a control), none (a fault with no finding), ms per case."""
    out: dict[str, dict[str, Any]] = {}
    for case in cases:
        start = time.perf_counter()
        got = top1(Path(case["path"]), signatures)
        ms = (time.perf_counter() - start) * 1000
        for key in (case["category"], "all"):
            row = out.setdefault(key, {"n": 0, "correct": 0, "wrong": 0, "none": 0, "ms": [], "misses": []})
            row["n"] += 1
            row["ms"].append(ms)
            if got == case["expected"]:
                row["correct"] += 1
            elif got is None:
                row["none"] += 1
                row["misses"].append(f"{case['name']}: nothing (expected {case['expected']})")
            else:
                row["wrong"] += 1
                row["misses"].append(f"{case['name']}: {got} (expected {case['expected']})")
    for row in out.values():
        ms = sorted(row.pop("ms"))
        row["ms_per_case"] = ms[len(ms) // 2]
        row["top1"] = row["correct"] / row["n"]
    return out
