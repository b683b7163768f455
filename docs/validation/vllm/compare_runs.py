#!/usr/bin/env python3
"""The side-by-side table of the debug (CUDA graphs) and fast-load (eager) runs.

usage: compare_runs.py DEBUG_REPORT.json DEBUG_TRAIN.log FAST_REPORT.json FAST_TRAIN.log

From each ``patchctl train`` report: the time to the first step (seconds since launch) and the
seconds per step (first to last logged step, over the steps between). From vLLM's own INFO lines
in each trainer log: the engine start (from ``Initializing a V1 LLM engine`` to the end of
``init engine``, by the lines' clock, 1 s resolution), vLLM's own figure for that phase and its
torch.compile share, the model loading time and the CUDA graph capture time. Prints Markdown.
"""
from __future__ import annotations

import json
import re
import sys
from datetime import datetime

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CLOCK = re.compile(r"(?:INFO|WARNING|ERROR) (\d\d-\d\d \d\d:\d\d:\d\d)")


def clock(line: str) -> datetime | None:
    m = _CLOCK.search(line)
    return datetime.strptime("2026-" + m.group(1), "%Y-%m-%d %H:%M:%S") if m else None


def vllm_figures(log: str) -> dict[str, float | None]:
    out: dict[str, float | None] = {k: None for k in ("engine_wall", "init_engine", "compile", "model_load",
                                                      "graph_capture", "weights_load")}
    start = None
    for raw in open(log, encoding="utf-8", errors="replace"):
        line = _ANSI.sub("", raw)
        if start is None and "Initializing a V1 LLM engine" in line:
            start = clock(line)
        m = re.search(r"init engine \(profile, create kv cache, warmup model\) took ([\d.]+) s(?: \(compilation: ([\d.]+) s\))?", line)
        if m and out["init_engine"] is None:
            out["init_engine"] = float(m.group(1))
            out["compile"] = float(m.group(2)) if m.group(2) else 0.0
            end = clock(line)
            if start and end:
                out["engine_wall"] = (end - start).total_seconds()
        m = re.search(r"Model loading took [\d.]+ GiB memory and ([\d.]+) seconds", line)
        if m and out["model_load"] is None:
            out["model_load"] = float(m.group(1))
        m = re.search(r"Loading weights took ([\d.]+) seconds", line)
        if m and out["weights_load"] is None:
            out["weights_load"] = float(m.group(1))
        m = re.search(r"Graph capturing finished in ([\d.]+) secs", line)
        if m and out["graph_capture"] is None:
            out["graph_capture"] = float(m.group(1))
    return out


def report_figures(path: str) -> dict[str, float | None]:
    d = json.load(open(path, encoding="utf-8"))
    t = d.get("timings", {})
    steps = d.get("steps") or []
    ats = [s.get("at") for s in steps if s.get("at") is not None]
    per = (ats[-1] - ats[0]) / (len(ats) - 1) if len(ats) > 1 else None
    return {"verdict": d.get("verdict"), "first_step": t.get("first_step"), "s_per_step": per, "steps": len(steps),
            "exited": t.get("trainer_exited"), "workers_ready": t.get("workers_ready")}


def fmt(v: float | None, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def main(argv: list[str]) -> None:
    rows = []
    for name, rep, log in (("debug (CUDA graphs, `enforce_eager=False`, `load_format=dummy`, 0.3)", argv[0], argv[1]),
                           ("fast-load (eager, `load_format=safetensors`, 0.4)", argv[2], argv[3])):
        r, v = report_figures(rep), vllm_figures(log)
        rows.append((name, r, v))
    print("| profile | verdict | steps | time to first step (s) | s/step | vLLM engine start, wall (s) | "
          "vLLM `init engine` (s) | of it torch.compile (s) | CUDA graph capture (s) | model loading (s) | trainer exit (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r, v in rows:
        print(f"| {name} | {r['verdict']} | {r['steps']} | {fmt(r['first_step'])} | {fmt(r['s_per_step'], 3)} | "
              f"{fmt(v['engine_wall'], 0)} | {fmt(v['init_engine'])} | {fmt(v['compile'])} | {fmt(v['graph_capture'], 0)} | "
              f"{fmt(v['model_load'], 3)} | {fmt(r['exited'])} |")


if __name__ == "__main__":
    main(sys.argv[1:])
