"""Are healthy reruns of smoke-vllm bitwise identical? And the bands validate --baseline draws from them.

    python repro_table.py RUN-report.json... [--bands bands.json]

Per run against the first: how many of the logged (step, metric) values are equal bit for bit
(timings, throughput and memory left out: they are not numerics), and the first step and metric
that differ. Then, over all runs, per step of every metric ``validate --baseline`` judges: the
spread (max - min) relative to the mean, and the band with baseline's margin; written as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "src"))

from patchctl.validate.baseline import MARGIN, METRICS

#: not numerics: wall-clock, rates and memory differ between any two runs
NOISE = ("timing", "perf/", "time", "throughput", "memory", "mfu", "_s/", "tokens_per")


def numerics(report: dict) -> dict[tuple[int, str], float]:
    out = {}
    for s in report["steps"]:
        for k, v in (s.get("metrics") or {}).items():
            if isinstance(v, (int, float)) and not any(n in k for n in NOISE):
                out[(int(s["step"]), k)] = float(v)
    return out


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("reports", nargs="+", type=Path)
    ap.add_argument("--bands", type=Path)
    args = ap.parse_args()
    runs = [(p.name.removesuffix("-report.json"), json.loads(p.read_text())) for p in args.reports]
    vals = [(name, numerics(doc)) for name, doc in runs]
    ref_name, ref = vals[0]
    print(f"| run | steps | values equal to {ref_name} | first difference (step, metric: this / {ref_name}) |")
    print("|---|---|---|---|")
    for name, v in vals:
        keys = sorted(set(v) & set(ref))
        eq = sum(same(v[k], ref[k]) for k in keys)
        diff = next((k for k in keys if not same(v[k], ref[k])), None)
        where = f"step {diff[0]}, `{diff[1]}`: {v[diff]!r} / {ref[diff]!r}" if diff else "none: bitwise identical"
        steps = len({k[0] for k in v})
        print(f"| {name} | {steps} | {eq} / {len(keys)} | {where} |")
    bands = []
    steps = sorted({k[0] for _, v in vals for k in v})
    print(f"\nBands over {len(vals)} runs (margin {MARGIN} x spread on each side), spread as % of |mean|:\n")
    print("| metric | step 1 | step 4 | step 8 | step 16 | largest |")
    print("|---|---|---|---|---|---|")
    for metric in METRICS:
        row, largest = {}, 0.0
        for step in steps:
            xs = [v[(step, metric)] for _, v in vals if (step, metric) in v and math.isfinite(v[(step, metric)])]
            if len(xs) < 2:
                continue
            lo, hi = min(xs), max(xs)
            mean = sum(xs) / len(xs)
            rel = (hi - lo) / abs(mean) * 100 if mean else (0.0 if hi == lo else math.inf)
            largest = max(largest, rel)
            pad = MARGIN * (hi - lo)
            bands.append(
                {
                    "metric": metric,
                    "step": step,
                    "runs": len(xs),
                    "min": lo,
                    "max": hi,
                    "spread": hi - lo,
                    "spread_pct": rel,
                    "band": [lo - pad, hi + pad],
                }
            )
            row[step] = f"{rel:.3g}%"
        if row:
            print(f"| `{metric}` | " + " | ".join(row.get(s, "-") for s in (1, 4, 8, 16)) + f" | {largest:.3g}% |")
    if args.bands:
        args.bands.write_text(
            json.dumps({"runs": [n for n, _ in vals], "margin": MARGIN, "bands": bands}, indent=1) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
