"""The table of the HF smoke's runs (run_v05.sh): per report.json, its verdict, failing gates, first
step and verdict times, and the figures behind the smoke profile's bars (learning gain, actor/ppo_kl
and grad norm on steps with an advantage), so each bar can be set from the healthy spread.

    python v05_table.py REPORT.json ...
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HEAD = (
    "| run | verdict | failing gates | first step (s) | verdict at (s) | steps | learning gain "
    "| median \\|ppo_kl\\| | \\|ppo_kl\\| range | grad norm range |\n|---|---|---|---|---|---|---|---|---|---|"
)


def has_advantage(metrics: dict[str, float | None]) -> bool:
    """As patchctl.train.signals.has_advantage: GRPO gives a group of equal rewards advantage 0."""
    return any(abs(metrics.get(k) or 0.0) > 1e-8 for k in ("critic/advantages/max", "critic/advantages/min"))


def row(path: Path) -> str:
    doc = json.loads(path.read_text())
    name = path.name.removeprefix("v05-").removesuffix("-report.json")
    gates = {g["name"]: g for g in doc["gates"]}
    failing = ", ".join(g["name"] for g in doc["gates"] if g["status"] == "fail") or "-"
    judged = [s["metrics"] for s in doc["steps"] if has_advantage(s["metrics"])]
    kls = [abs(m["actor/ppo_kl"]) for m in judged if m.get("actor/ppo_kl") is not None]
    norms = [m["actor/grad_norm"] for m in judged if m.get("actor/grad_norm") is not None]
    t = doc.get("timings") or {}
    learning = gates.get("learning", {}).get("value")
    return (
        f"| {name} | {doc['verdict'].upper()} | {failing} | {_num(t.get('first_step'))} | {_num(t.get('verdict'))} "
        f"| {len(doc['steps'])} | {_num(learning, '.3f')} "
        f"| {_num(statistics.median(kls) if kls else None, '.3g')} "
        f"| {_span(kls, '.3g')} | {_span(norms, '.2f')} |"
    )


def _num(value: object, fmt: str = ".1f") -> str:
    return format(value, fmt) if isinstance(value, (int, float)) else "-"


def _span(values: list[float], fmt: str) -> str:
    return f"{min(values):{fmt}}-{max(values):{fmt}}" if values else "-"


def main(paths: list[str]) -> int:
    print(HEAD)
    for p in paths:
        print(row(Path(p)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
