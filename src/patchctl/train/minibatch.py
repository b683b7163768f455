"""How many optimizer steps verl takes per training step, read from the launch command, so that
``update-applied`` reads ``actor/ppo_kl`` only where it can show an update.

verl scores every mini-batch of a step against the log-probs computed before the step's first
update, so ``actor/ppo_kl`` is how far the step's earlier optimizer steps moved the policy: 0 on
the first mini-batch, and 0 on every one when the optimizer step is skipped. With one optimizer
step per training step (one mini-batch, one epoch) it is therefore 0 however healthy the update.
The smoke profiles take two; an override such as ``actor_rollout_ref.actor.ppo_mini_batch_size=16``
makes it one, and the gate must then not read the 0 as a skipped step. Seen: ppo_kl exactly 0 on
every step of one-mini-batch HF smoke runs, healthy (H200, 2026-11-21, the 30 steps of
tests/train/fixtures/smoke_h200_pass.log; H100, 2026-11-24, the smoke with ppo_mini_batch_size=16,
docs/validation/vllm-smoke/runs4/h-one-mini-batch-report.json) and sabotaged (H100, runs3/v05-*); with
two mini-batches, healthy medians 6.3e-4 to 1.7e-3 (docs/validation/vllm-smoke/README.md, "Fourth pass").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from patchctl.train.profiles import Gates

BATCH = "data.train_batch_size"
MINI = "actor_rollout_ref.actor.ppo_mini_batch_size"
EPOCHS = "actor_rollout_ref.actor.ppo_epochs"


def per_step(argv: Sequence[str]) -> int | None:
    """Optimizer steps per training step: ppo_epochs x mini-batches per batch (verl splits the batch
    into chunks of the mini-batch size); the last override of a key wins, as in hydra. None where the
    command gives no integer train batch or mini-batch size (verl's config default then decides)."""
    last = _overrides(argv)
    try:
        batch, mini, epochs = int(last[BATCH]), int(last[MINI]), int(last.get(EPOCHS, "1"))
    except (KeyError, ValueError):
        return None
    if min(batch, mini, epochs) <= 0:
        return None
    return epochs * -(-batch // mini)


def fit(gates: Gates, argv: Sequence[str]) -> Gates:
    """``gates`` for this command: the ppo_kl bar off, saying why, where the command takes one
    optimizer step per training step; as they are otherwise."""
    if gates.update_kl_min is None or per_step(argv) != 1:
        return gates
    values = _overrides(argv)
    why = (
        f"one optimizer step per training step ({BATCH}={values[BATCH]}, {MINI}={values[MINI]}): "
        "actor/ppo_kl is 0 by construction there, so a skipped optimizer step shows only in learning"
    )
    return replace(gates, update_kl_min=None, update_kl_off=why)


def _overrides(argv: Sequence[str]) -> dict[str, str]:
    """The batch, mini-batch and epoch overrides of the command, the last of each key winning (as
    in hydra)."""
    last: dict[str, str] = {}
    for arg in argv:
        key, sep, value = arg.lstrip("+").partition("=")
        if sep and key in (BATCH, MINI, EPOCHS):
            last[key] = value
    return last
