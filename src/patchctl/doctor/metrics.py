"""Failures that print no error: what a run's per-step metrics say went wrong.

A run can exit 0 and learn nothing: the reward stays at 0, the update changes nothing, vLLM samples
from other weights than the actor trains. No log line says so; the metrics verl logs each step
do. ``patchctl train`` and ``validate`` keep them in ``report.json`` (``steps[].metrics``); this
module reads that file and names each such failure with its likely causes and the check that
tells them apart.

The thresholds come from our own runs (``docs/validation``): every healthy smoke run yields no
finding, and each sabotaged one (advantage sign flipped, optimizer step skipped, learning rate 0,
weight sync off, rollout temperature ignored) yields the finding its sabotage causes.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchctl.errors import LogUnreadable

REPORT = "report.json"
#: the reward verl logs per step, in the order they are preferred
REWARD = ("critic/score/mean", "critic/rewards/mean")
ENTROPY = "actor/entropy"
GRAD_NORM = "actor/grad_norm"
CLIP_RATIO = "response_length/clip_ratio"
PROBS_DIFF = "training/rollout_probs_diff_mean"
PPO_KL = "actor/ppo_kl"
LR = "actor/lr"
#: the mean |p_rollout - p_actor| above which rollout and actor disagree (validate's own gate)
PROBS_DIFF_LIMIT = 0.01
#: nats: below this the policy samples (almost) one answer per prompt
ENTROPY_FLOOR = 0.05
#: a step's grad norm this many times the first steps' median is an explosion
EXPLODES = 20.0
#: the share of responses cut at max_response_length above which they are pinned there
PINNED = 0.9
#: the fewest steps over which "did not change" means something
MIN_STEPS = 10


@dataclass(frozen=True)
class MetricFinding:
    id: str
    title: str
    #: what the metrics show, with the steps and values
    evidence: str
    #: the likely causes, most likely first
    causes: tuple[str, ...]
    #: the check that tells the causes apart
    check: str

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "title": self.title,
            "evidence": self.evidence,
            "causes": list(self.causes),
            "check": self.check,
        }


Steps = list[tuple[int, dict[str, Any]]]


def load_report(path: Path) -> tuple[Path, Steps]:
    """(the report read, its (step, metrics) pairs); ``path`` is a report.json or a run directory
    holding one. Anything else is a one-line error naming the file."""
    report = path / REPORT if path.is_dir() else path
    fix = "pass the report.json that patchctl train or validate wrote (or its run directory)"
    try:
        doc = json.loads(report.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LogUnreadable(path, f"no {REPORT} in this directory", fix) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LogUnreadable(report, f"cannot be read ({exc})", fix) from None
    except json.JSONDecodeError as exc:
        raise LogUnreadable(report, f"not JSON (line {exc.lineno}: {exc.msg})", fix) from None
    steps = doc.get("steps") if isinstance(doc, dict) else None
    if not isinstance(steps, list) or not all(
        isinstance(s, dict) and isinstance(s.get("metrics"), dict) for s in steps
    ):
        raise LogUnreadable(report, "has no steps[].metrics (not a patchctl train or validate report)", fix)
    numbered = [
        (n if isinstance(n := s.get("step"), int) and not isinstance(n, bool) else i) for i, s in enumerate(steps, 1)
    ]
    return report, [(n, s["metrics"]) for n, s in zip(numbered, steps, strict=True)]


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _series(steps: Steps, key: str) -> list[tuple[int, float]]:
    return [(n, float(m[key])) for n, m in steps if _finite(m.get(key))]


def _tail(s: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """The last quarter of a run (at least 3 steps): where it ended up."""
    return s[-max(3, len(s) // 4) :]


def _head(s: list[tuple[int, float]]) -> list[tuple[int, float]]:
    return s[: max(3, len(s) // 4)]


def _mean(s: list[tuple[int, float]]) -> float:
    return statistics.fmean(v for _, v in s)


def _span(s: list[tuple[int, float]]) -> str:
    return f"step {s[0][0]}" if len(s) == 1 else f"steps {s[0][0]}-{s[-1][0]}"


def _g(v: float) -> str:
    return f"{v:.3g}"


def non_finite(steps: Steps) -> MetricFinding | None:
    bad = [
        (n, k, v)
        for n, m in steps
        for k, v in m.items()
        if v is None or (isinstance(v, float) and not math.isfinite(v))
    ]
    if not bad:
        return None
    at = sorted({n for n, _, _ in bad})
    shown = ", ".join(f"{k}={v}" for n, k, v in bad if n == at[0])[:300]
    return MetricFinding(
        "nan-steps",
        "Non-finite metrics (NaN or inf)",
        f"{len(at)} step(s) with NaN/inf/missing values, first step {at[0]}: {shown}",
        (
            "a loss or gradient overflowed: fp16 without loss scaling, a learning rate too high for the model",
            "a log-probability of a token with probability 0 (a response token outside the actor's vocabulary, "
            "a mask that lets padding in)",
            "the reward function returned NaN or None for some samples",
        ),
        "Find the first metric that went non-finite at that step: the loss and grad norm point at the "
        "update (lower actor_rollout_ref.actor.optim.lr, keep actor_rollout_ref.actor.grad_clip=1.0, use bf16); "
        "critic/score or critic/rewards at the reward function (run it on that step's samples).",
    )


def reward_flat(steps: Steps) -> MetricFinding | None:
    key = next((k for k in REWARD if _series(steps, k)), None)
    if key is None:
        return None
    s = _series(steps, key)
    tail, head = _tail(s), _head(s)
    zeros = sum(abs(v) < 1e-9 for _, v in tail)
    always = all(abs(v) < 1e-9 for _, v in s)
    fell = zeros * 2 >= len(tail) and _mean(head) > 0 and _mean(tail) < 0.1 * _mean(head)
    if len(s) >= 3 and (always or fell):
        return MetricFinding(
            "reward-zero",
            "Reward flat at 0",
            f"{key} is 0 on every one of {_span(s)}"
            if always
            else f"{key} is 0 on {zeros} of {_span(tail)} (mean {_g(_mean(tail))}; "
            f"it was {_g(_mean(head))} on {_span(head)})",
            (
                "the policy learned away from the reward: an advantage or loss with the wrong sign drives it to "
                "answers that score 0"
                if not always
                else "the reward function never matches: the answer format it parses, or the data_source it is "
                "chosen by, differs from what the model writes",
                "responses are cut at max_response_length before the answer is written",
                "the reward function fails on every sample and returns 0 (an exception caught inside it)",
            ),
            "Print a few responses of the last steps with their scores and run the reward function by hand on a "
            "known-correct answer; if that scores 1, compare the advantage's sign with the reward's on one batch.",
        )
    if len(s) >= 5 and max(v for _, v in s) - min(v for _, v in s) < 1e-9:
        return MetricFinding(
            "reward-constant",
            "Reward constant",
            f"{key} is {_g(s[0][1])} on every one of {_span(s)}",
            (
                "the reward does not depend on the response (a constant or format-only reward that every sample meets)",
                "every sample of a prompt is the same (temperature 0, or n=1 with GRPO), so nothing differs to "
                "learn from",
            ),
            "Score two different responses to one prompt by hand; check actor_rollout_ref.rollout.temperature > 0 "
            "and actor_rollout_ref.rollout.n > 1 for GRPO.",
        )
    return None


def entropy_collapsed(steps: Steps) -> MetricFinding | None:
    s = _series(steps, ENTROPY)
    if len(s) < 3 or _mean(_tail(s)) >= ENTROPY_FLOOR or _mean(_head(s)) < ENTROPY_FLOOR:
        return None
    return MetricFinding(
        "entropy-collapsed",
        "Entropy collapsed",
        f"{ENTROPY} fell from {_g(_mean(_head(s)))} ({_span(_head(s))}) to {_g(_mean(_tail(s)))} ({_span(_tail(s))})",
        (
            "the learning rate is too high or the clip range too wide: a few updates make the policy deterministic",
            "the reward is easy to game with one answer, which the policy then always gives",
            "no entropy bonus and no KL to the reference hold the policy back",
        ),
        "Read the responses of the last steps: one repeated answer is collapse. Lower "
        "actor_rollout_ref.actor.optim.lr, or keep the policy near the reference "
        "(actor_rollout_ref.actor.use_kl_loss=True) or add actor_rollout_ref.actor.entropy_coeff.",
    )


def length_pinned(steps: Steps) -> MetricFinding | None:
    s = _series(steps, CLIP_RATIO)
    key = next((k for k in REWARD if _series(steps, k)), None)
    if len(s) < 3 or _mean(_tail(s)) < PINNED:
        return None
    if key is not None:  # pinned and learning: a task whose answers need the whole length
        r = _series(steps, key)
        if len(r) >= 3 and _mean(_tail(r)) > _mean(_head(r)) + 0.05:
            return None
    return MetricFinding(
        "response-length-pinned",
        "Response length pinned at the maximum",
        f"{CLIP_RATIO} {_g(_mean(_tail(s)))} over {_span(_tail(s))}: most responses end at max_response_length, "
        "and the reward does not rise",
        (
            "the model never emits its end-of-sequence token: a base model or a tokenizer without the chat "
            "template it was tuned with, or an eos_token_id that is not the one the model writes",
            "the policy degenerated into repeating itself",
            "data.max_response_length is too short for the answers the task needs",
        ),
        "Decode a few responses: endless repetition or text past the answer means no EOS (check "
        "generation_config.json's eos_token_id and the chat template); complete answers cut short mean a longer "
        "data.max_response_length.",
    )


def probs_diff_high(steps: Steps) -> MetricFinding | None:
    s = _series(steps, PROBS_DIFF)
    if len(s) < 3:
        return None
    tail = _tail(s)
    level = statistics.median(v for _, v in tail)
    if level <= PROBS_DIFF_LIMIT:
        return None
    return MetricFinding(
        "rollout-probs-diff",
        "Rollout and actor disagree on the sampled tokens' probabilities",
        f"{PROBS_DIFF} median {_g(level)} over {_span(tail)} (above {PROBS_DIFF_LIMIT}; the first step: {_g(s[0][1])})",
        (
            "the rollout samples from stale weights: the actor's update does not reach vLLM (weight sync off or "
            "failing)"
            if s[0][1] <= PROBS_DIFF_LIMIT
            else "the rollout samples with other settings than the actor scores with: temperature (or top-p/top-k) "
            "not applied to the log-probs on one side",
            "rollout and actor compute in different precision or kernels (fp16 vs bf16, another attention backend)",
            "a prefix cache in vLLM serving pages computed with earlier weights",
        ),
        "If the difference is 0 on the first step and grows after it, the weights are not synced: check that the "
        "rollout's weights change between steps. If it is high from the first step, compare "
        "actor_rollout_ref.rollout.temperature with the temperature the actor divides logits by, and the dtypes.",
    )


def grad_norm(steps: Steps) -> MetricFinding | None:
    s = _series(steps, GRAD_NORM)
    if len(s) < 3:
        return None
    tail = _tail(s)
    zeros = sum(v == 0 for _, v in tail)
    if zeros * 2 >= len(tail):
        return MetricFinding(
            "grad-norm-zero",
            "Gradient norm 0: the policy gets no update",
            f"{GRAD_NORM} is 0 on {zeros} of {_span(tail)}",
            (
                "every advantage is 0: all samples of each prompt get the same reward (all 0 or all 1), so GRPO has "
                "nothing to compare",
                "the loss mask is empty: no response token counts (responses of length 0, a wrong response_mask)",
                "the actor's parameters are frozen (requires_grad off, a LoRA without trainable weights)",
            ),
            "Look at critic/advantages/max and min of those steps: both 0 means equal rewards within every group "
            "(see the reward finding); otherwise check response_length/mean and which parameters require grad.",
        )
    base = statistics.median(v for _, v in _head(s))
    worst = max(s, key=lambda x: x[1])
    if base > 0 and worst[1] > EXPLODES * base:
        return MetricFinding(
            "grad-norm-exploding",
            "Gradient norm exploding",
            f"{GRAD_NORM} {_g(worst[1])} at step {worst[0]}, {_g(worst[1] / base)} times the first steps' "
            f"median {_g(base)}",
            (
                "the learning rate is too high for this model and batch",
                "a few very long or off-policy samples with large importance ratios dominate the loss",
                "fp16 overflow (no loss scaling)",
            ),
            "Check actor_rollout_ref.actor.grad_clip (1.0 keeps the update bounded), lower "
            "actor_rollout_ref.actor.optim.lr, and look at actor/pg_clipfrac and response_length/max at that step.",
        )
    return None


def not_updating(steps: Steps) -> MetricFinding | None:
    """The optimizer's step changes nothing: an lr of 0, a skipped step. Seen as a policy whose
    entropy does not move and whose KL to the sampling policy stays 0 while gradients flow."""
    lr, kl, ent, gn = (_series(steps, k) for k in (LR, PPO_KL, ENTROPY, GRAD_NORM))
    if len(gn) < MIN_STEPS or statistics.median(v for _, v in gn) <= 0:
        return None
    lr_zero = bool(lr) and all(v == 0 for _, v in lr)
    flat = bool(ent) and abs(_mean(_tail(ent)) - _mean(_head(ent))) < 0.01 * abs(_mean(_head(ent)))
    kl_zero = bool(kl) and statistics.median(abs(v) for _, v in kl) < 1e-6
    if not (lr_zero or (flat and kl_zero)):
        return None
    evidence = [f"{LR} is 0 on every step"] if lr_zero else []
    if kl_zero:
        evidence.append(f"{PPO_KL} median 0 over {_span(kl)}")
    if flat:
        evidence.append(f"{ENTROPY} {_g(_mean(_head(ent)))} -> {_g(_mean(_tail(ent)))}")
    evidence.append(f"while {GRAD_NORM} has median {_g(statistics.median(v for _, v in gn))}")
    causes = (
        ("the learning rate is 0 (actor_rollout_ref.actor.optim.lr, or a warm-up or schedule that stays at 0)",)
        if lr_zero
        else ()
    ) + (
        "the optimizer step is skipped or undone: a patched update that returns before optimizer.step(), a grad "
        "scaler skipping every step on inf, weights reloaded after the step",
        "the updated weights are not the ones used: the actor trains a copy",
    )
    return MetricFinding(
        "policy-not-updating",
        "The update changes nothing: gradients flow, the policy stays the same",
        "; ".join(evidence),
        causes,
        "Print actor/lr for a step, then compare one parameter of the actor before and after update_policy on one "
        "batch: unchanged with a non-zero lr and gradient means the step is skipped.",
    )


CHECKS: tuple[Callable[[Steps], MetricFinding | None], ...] = (
    non_finite,
    reward_flat,
    grad_norm,
    not_updating,
    probs_diff_high,
    entropy_collapsed,
    length_pinned,
)


def diagnose_metrics(steps: Steps) -> list[MetricFinding]:
    """The failures the metrics show, most telling first; [] for a healthy run."""
    return [f for check in CHECKS if (f := check(steps)) is not None]
