"""smoke-vllm's replay buffer on verl >= 0.9: verl's own, polled every 0.05 s instead of every 2 s.

verl 0.9's v1 trainer waits for a step's samples by polling its replay buffer, and the built-in
one sleeps 2.0 s between polls (``ReplayBuffer.poll_interval``, which no config key sets). The
smoke's 64 short samples are ready in a fraction of a second, so each step waited ~2 s for
nothing: ``timing_s/gen`` was 2.01-2.05 s on every step of every healthy run (H100, 2026-11-24),
over half of a 3.5 s step. verl loads this class from ``trainer.v1.sampler.custom_sampler``; a
custom sampler gets no DAPO settings from verl, and the smoke uses none.

verl imports this file by its path: no patchctl imports.
"""

from __future__ import annotations

from typing import Any

from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

POLL_SECONDS = 0.05


class QuickPollReplayBuffer(ReplayBuffer):  # type: ignore[misc] # verl is not installed where mypy runs: Any base
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["poll_interval"] = POLL_SECONDS
        super().__init__(*args, **kwargs)
