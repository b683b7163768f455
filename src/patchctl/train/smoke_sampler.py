"""smoke-vllm's replay buffer on verl >= 0.9: verl's own, polled every 0.05 s instead of every 2 s,
and handing out each step's samples in a fixed order.

verl 0.9's v1 trainer waits for a step's samples by polling its replay buffer, and the built-in
one sleeps 2.0 s between polls (``ReplayBuffer.poll_interval``, which no config key sets). The
smoke's 64 short samples are ready in a fraction of a second, so each step waited ~2 s for
nothing: ``timing_s/gen`` was 2.01-2.05 s on every step of every healthy run (H100, 2026-11-24),
over half of a 3.5 s step. verl loads this class from ``trainer.v1.sampler.custom_sampler``; a
custom sampler gets no DAPO settings from verl, and the smoke uses none.

Order: verl builds a step's batch from its metadata in the order the samples *finished*
(``_materialize_batch`` walks a dict filled as rollouts complete) and picks among prompts of the
same step in a set's order. Both vary from run to run, and the batch's order decides how the
mini- and micro-batches are cut, so the same samples gave different sums in the last bits. Here
the prompts are taken by (step, prompt id) and each prompt's samples by their index in the group.

verl imports this file by its path: no patchctl imports.
"""

from __future__ import annotations

from typing import Any

from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

POLL_SECONDS = 0.05


def _sample_key(key: str, order: dict[str, int]) -> tuple[int, str, tuple[int, ...], str]:
    """``{uid}_{session}_{i}`` -> (the prompt's place, its id, the sample's numbers, the key)."""
    uid, _, rest = key.partition("_")
    numbers = tuple(int(p) for p in rest.split("_") if p.isdigit())
    return order.get(uid, len(order)), uid, numbers, key


def ordered(snapshot: dict[str, Any], prompts: list[str]) -> dict[str, Any]:
    """The metadata with the selected prompts' samples first, in (prompt, sample index) order."""
    order = {uid: k for k, uid in enumerate(prompts)}
    return {key: snapshot[key] for key in sorted(snapshot, key=lambda k: _sample_key(k, order))}


class QuickPollReplayBuffer(ReplayBuffer):  # type: ignore[misc] # verl is not installed where mypy runs: Any base
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["poll_interval"] = POLL_SECONDS
        super().__init__(*args, **kwargs)

    def _select_prompt_uids(self, partition_id: str, sampleable_keys: Any, batch_size: int) -> Any:
        # verl sorts by step, stably: a sorted list (not the set) makes ties go by prompt id
        return super()._select_prompt_uids(partition_id, sorted(sampleable_keys), batch_size)

    def _materialize_batch(self, partition_id: str, selected_prompt_uids: list[str], partition_snapshot: Any) -> Any:
        snapshot = ordered(dict(partition_snapshot), list(selected_prompt_uids))
        return super()._materialize_batch(partition_id, selected_prompt_uids, snapshot)
