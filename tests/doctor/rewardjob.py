"""A tiny GRPO run whose reward function can be the planted fault (benchmarks/bench_doctor.py's
fault-injection set): ``python rewardjob.py RUN_DIR right|zero [STEPS]``.

A softmax policy over four answers learns which one is right: per step it samples groups of
answers, scores them with the reward function, takes group-normalised advantages (GRPO) and one
policy-gradient step. ``zero`` is a reward function that returns 0 for every answer, as one that
fails to parse the model's answer does. The run writes ``report.json`` as ``patchctl train`` does
(``steps[].metrics`` under verl's metric names), computed from what the run really did.
"""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

ANSWERS = 4
RIGHT = 2
GROUPS, GROUP = 4, 8
LR = 0.2


def reward_right(answer: int) -> float:
    return 1.0 if answer == RIGHT else 0.0


def reward_zero(answer: int) -> float:
    return 0.0  # the planted fault: nothing the model writes is ever scored


def softmax(logits: list[float]) -> list[float]:
    top = max(logits)
    e = [math.exp(x - top) for x in logits]
    return [x / sum(e) for x in e]


def main(run: Path, kind: str, steps: int) -> None:
    rng = random.Random(0)
    reward = reward_zero if kind == "zero" else reward_right
    logits = [0.0] * ANSWERS
    out = []
    for step in range(1, steps + 1):
        p = softmax(logits)
        grad = [0.0] * ANSWERS
        scores = []
        for _ in range(GROUPS):
            answers = rng.choices(range(ANSWERS), weights=p, k=GROUP)
            r = [reward(a) for a in answers]
            scores += r
            mean = sum(r) / GROUP
            std = math.sqrt(sum((x - mean) ** 2 for x in r) / GROUP)
            for a, x in zip(answers, r, strict=True):
                adv = (x - mean) / (std + 1e-6)
                for k in range(ANSWERS):
                    grad[k] += adv * ((1.0 if k == a else 0.0) - p[k]) / (GROUPS * GROUP)
        logits = [x + LR * g for x, g in zip(logits, grad, strict=True)]
        q = softmax(logits)
        out.append(
            {
                "step": step,
                "at": round(step * 0.5, 2),
                "metrics": {
                    "critic/score/mean": sum(scores) / len(scores),
                    "critic/rewards/mean": sum(scores) / len(scores),
                    "actor/entropy": -sum(x * math.log(x) for x in p if x > 0),
                    "actor/grad_norm": math.sqrt(sum(g * g for g in grad)),
                    "actor/lr": LR,
                    "actor/ppo_kl": sum(a * math.log(a / b) for a, b in zip(p, q, strict=True) if a > 0),
                    "response_length/clip_ratio": 0.0,
                },
            }
        )
    run.mkdir(parents=True, exist_ok=True)
    doc = {"steps": out, "timed_out": False, "timings": {"trainer_exited": steps * 0.5 + 0.5}}
    (run / "report.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 30)
