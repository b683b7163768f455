"""Where a vLLM-rollout run's start-up goes: the stage breakdown of `patchctl train` on verl >= 0.9.

verl's log says when each process of the chain comes up (TaskRunner, the FSDP worker, the vLLM
HTTP server, the engine core and its worker, the agent-loop worker), but its lines carry no
common clock: many have no timestamp at all, and Ray relays them from every process. So this
script stamps each line with the seconds since `patchctl train` started, as the line reaches
the run's ``train.log``, and turns those stamps into stages. Two modes:

    python benchmarks/vllm_stages.py follow RUN_DIR/train.log T0 > timed.log   # T0: epoch seconds
    python benchmarks/vllm_stages.py table NAME=timed.log [NAME=timed.log ...] [--json OUT]

``follow`` runs beside the trainer (it waits for the log to appear, and stops when ``patchctl``
writes its last line or the file stops growing for ``--idle`` seconds). ``table`` prints one
column per run beside the baseline of issue 21 (a cold H100, debug profile, 2026-11-24, Ray
2.49.2: 275 s to the first step as committed, 237 s with eager vLLM, one agent-loop and one
reward worker and no torch.compile). A stage's seconds run from the previous marker that was
seen to its own; a marker a run never printed is left out, and its time falls to the next.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

#: (stage, the first log line that ends it); in the order verl 0.9.1 prints them
MARKERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Ray up", re.compile(r"Started a local Ray instance|Connected to Ray cluster|Connecting to existing Ray")),
    ("task runner up", re.compile(r"^\(TaskRunner")),
    ("task runner: create worker group", re.compile(r"create worker group")),
    ("FSDP worker up", re.compile(r"^\((WorkerDict|pid=\d+)\b")),
    ("FSDP model built", re.compile(r"After FSDP, memory allocated")),
    ("vLLM server up", re.compile(r"^\(vLLMHttpServer pid=")),
    ("vLLM model config resolved", re.compile(r"Resolved architecture")),
    ("engine core up", re.compile(r"Initializing a V1 LLM engine")),
    ("engine worker up", re.compile(r"Injected <class .*WorkerExtension")),
    ("engine ready", re.compile(r"init engine \(profile, create kv cache")),
    ("agent-loop worker up", re.compile(r"^\(AgentLoopWorker")),
    ("first step", re.compile(r"\bstep:1\b")),
)
LAST_STEP = re.compile(r"\bstep:(\d+)\b")
#: Ray colours the "(Actor pid=N)" prefix of relayed lines
ANSI = re.compile(r"\x1b\[[0-9;]*m")

#: issue 21's calibration (cold H100, debug profile, verl 0.9.1 + vLLM 0.24, Ray 2.49.2)
BASELINE = {"first step": 275.0}
BASELINE_NOTE = (
    "baseline: issue 21, cold H100, debug as committed, Ray 2.49.2: first step at 275 s (237 s with "
    "eager vLLM, one agent-loop and one reward worker, no torch.compile); its stage split was coarser"
)


def follow(log: Path, t0: float, idle: float) -> None:
    """Print ``seconds<TAB>line`` for each line of ``log`` as it is written (t0: epoch seconds)."""
    while not log.exists():
        if time.time() - t0 > 3600:
            return
        time.sleep(0.05)
    last = time.time()
    with open(log, encoding="utf-8", errors="replace") as f:
        buf = ""
        while True:
            chunk = f.readline()
            if chunk:
                buf += chunk
                if buf.endswith("\n"):
                    print(f"{time.time() - t0:.2f}\t{buf.rstrip()}", flush=True)
                    buf = ""
                last = time.time()
                continue
            if time.time() - last > idle:
                return
            time.sleep(0.05)


def stages(timed: Path) -> dict[str, float]:
    """Each marker's first time, the last step's, and the log's end, from a ``follow`` output."""
    seen: dict[str, float] = {}
    last, pos = 0.0, -1
    for raw in timed.read_text(encoding="utf-8", errors="replace").splitlines():
        stamp, _, line = raw.partition("\t")
        line = ANSI.sub("", line)
        try:
            t = float(stamp)
        except ValueError:
            continue
        last = t
        # verl brings the processes up one after another: a marker counts only after the ones
        # before it that were seen (Ray labels a new actor's first lines "(pid=N)" alike)
        for i, (name, pattern) in enumerate(MARKERS):
            if i > pos and pattern.search(line):
                seen[name], pos = t, i
                break
        m = LAST_STEP.search(line)
        if m:
            seen["last step"] = t
            seen["steps"] = float(m.group(1))
    seen["log ends"] = last
    return seen


def table(runs: dict[str, dict[str, float]]) -> str:
    """Stage seconds (time since the previous marker seen) and the absolute first-step time."""
    names = list(runs)
    rows = ["| stage | " + " | ".join(names) + " | baseline |", "|---|" + "---|" * (len(names) + 1)]
    for stage, _ in MARKERS:
        cells = []
        for run in names:
            seen = runs[run]
            if stage not in seen:
                cells.append("-")
                continue
            before = [seen[s] for s, _ in MARKERS if s in seen and seen[s] <= seen[stage] and s != stage]
            cells.append(f"{seen[stage] - max(before, default=0.0):.1f}")
        rows.append(f"| {stage} | " + " | ".join(cells) + f" | {BASELINE.get(stage, '-')} |")
    for label, key in (("**first step at**", "first step"), ("last step at", "last step"), ("log ends at", "log ends")):
        cells = [f"{runs[r][key]:.1f}" if key in runs[r] else "-" for r in names]
        rows.append(
            f"| {label} | " + " | ".join(cells) + f" | {BASELINE['first step'] if key == 'first step' else '-'} |"
        )
    return "\n".join(rows) + "\n\n" + BASELINE_NOTE


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    f = sub.add_parser("follow")
    f.add_argument("log", type=Path)
    f.add_argument("t0", type=float)
    f.add_argument("--idle", type=float, default=900.0)
    t = sub.add_parser("table")
    t.add_argument("runs", nargs="+", help="NAME=TIMED_LOG")
    t.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    if a.mode == "follow":
        follow(a.log, a.t0, a.idle)
        return 0
    runs = {}
    for spec in a.runs:
        name, _, path = spec.partition("=")
        if not path or not Path(path).is_file():
            print(f"vllm_stages: {spec!r}: give NAME=TIMED_LOG, a file written by 'follow'", file=sys.stderr)
            return 2
        runs[name] = stages(Path(path))
    print(table(runs))
    if a.json:
        a.json.write_text(json.dumps(runs, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
