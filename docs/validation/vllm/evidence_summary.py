#!/usr/bin/env python3
"""Summarise the run's evidence: where the uky Triton block executed, and vLLM's start-up lines.

usage: evidence_summary.py EVIDENCE.jsonl TRAIN_LOG...

For each process that imported ``verl.workers.rollout.vllm_rollout`` (one JSON line per event,
written by evidence/sitecustomize.py) it prints the pid, the parent, the process title vLLM gave
it (the latest sample), whether vLLM's GPU worker modules were loaded in it, the block's
``cuda_stubs`` and whether the stubs directory is on its ``LD_LIBRARY_PATH``. Then, per log, the
lines in which Ray or vLLM name those pids, and vLLM's own timing lines of its engine start.
"""
from __future__ import annotations

import json
import re
import sys
from collections import defaultdict

TIMING = re.compile(r"Loading weights took|Model loading took|torch\.compile took|Graph capturing finished|"
                    r"init engine|Compiling a graph|Dynamo bytecode transform|Using FlashAttention|"
                    r"Using .*backend|attention backend|Available KV cache memory|GPU KV cache size|"
                    r"Starting vLLM|Started server process|Application startup complete|enforce_eager|"
                    r"Unknown vLLM environment variable|Cudagraph|CUDA graph|cudagraph_mode")


def main(evidence: str, logs: list[str]) -> None:
    procs: dict[int, list[dict]] = defaultdict(list)
    try:
        with open(evidence, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    rec = json.loads(line)
                    procs[rec["pid"]].append(rec)
    except FileNotFoundError:
        print(f"{evidence}: no evidence file")
    print(f"processes that executed the uky block (verl.workers.rollout.vllm_rollout imported): {len(procs)}")
    for pid, recs in sorted(procs.items(), key=lambda kv: kv[1][0]["t"]):
        first = next((r for r in recs if r["event"] == "uky-block-executed"), recs[0])
        last = recs[-1]
        mods = {k.rsplit(".", 1)[-1]: v for k, v in (last.get("modules") or {}).items() if v}
        print(f"- pid {pid} (parent {first['ppid']}): title now {last['cmdline'][:90]!r}")
        stubs = first.get("cuda_stubs") or ""
        before = (first.get("ld_library_path_before") or "").split(":")
        after = (first.get("ld_library_path_after") or "").split(":")
        # computed from before/after: the first run's records carry a field of that name that meant
        # only "the stubs directory exists" (the block's outer branch), see README.md
        prepended = bool(stubs) and stubs not in before and stubs in after
        print(f"    cuda_stubs={stubs!r} dir exists={first.get('stubs_dir_exists')} "
              f"already on LD_LIBRARY_PATH before={stubs in before} prepended by the block={prepended} "
              f"on LD_LIBRARY_PATH after={stubs in after}; loaded: {', '.join(mods) or '-'}")
        print(f"    LD_LIBRARY_PATH={(last.get('ld_library_path') or first.get('ld_library_path_after') or '')[:160]}")
    pids = {str(p) for p in procs}
    for log in logs:
        print(f"\n== {log}")
        named, timing = [], []
        try:
            lines = open(log, encoding="utf-8", errors="replace").read().splitlines()
        except FileNotFoundError:
            print("  (missing)")
            continue
        for ln in lines:
            m = re.search(r"\(([\w:.-]+) pid=(\d+)", ln)
            if m and m.group(2) in pids and len(named) < 12 and not any(m.group(2) in n for n in named):
                named.append(ln[:200])
            if TIMING.search(ln) and len(timing) < 40:
                timing.append(ln[:260])
        print("  first line naming each evidence pid:")
        for ln in named:
            print("   ", ln)
        print("  vLLM start-up lines:")
        for ln in timing:
            print("   ", ln)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
