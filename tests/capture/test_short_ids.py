"""Capture's patch ids stay short (issue 39, requirement 4): a real fork's file
``run_qwen2_5_vl-3b_fake_dataset_FAST_LOAD.sh`` made ids of 43 characters, which stacked the
matrix's header one character per line at 80 columns. Ids that already fit are unchanged, since
recorded resolutions and ``--only`` name patches by id."""

from __future__ import annotations

import re

from patchctl.capture.model import MAX_ID, new_id

#: stems capture built from real forks' files and scopes (TinyZero, Search-R1, Skywork-OR1, uky)
STEMS = [
    "run_qwen2_5_vl-3b_fake_dataset_FAST_LOAD-env",
    "fsdp_workers-build_critic_model_optimizer",
    "megatron_workers-ActorRolloutRefWorker",
    "reward_model-re_encode_by_rm_tokenizer",
    "move-run_qwen2_5_vl-3b_fake_dataset_DEBUG.sh",
]


def test_long_ids_are_cut_to_the_limit_keeping_the_first_and_last_words() -> None:
    assert new_id(STEMS[0], set()) == "run-dataset-fast-load-env"
    assert new_id("ppo_trainer-yaml", set()) == "ppo-trainer-yaml"
    for stem in STEMS:
        pid = new_id(stem, set())
        assert len(pid) <= MAX_ID and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", pid), pid
        assert pid.split("-")[0] == re.split(r"[^a-z0-9]+", stem.lower())[0]


def test_an_id_that_fits_is_kept_as_it_was() -> None:
    assert new_id("vllm_async_server-run_server", set()) == "vllm-async-server-run-server"  # 28


def test_numbered_ids_are_unique_and_within_the_limit() -> None:
    taken: set[str] = set()
    for _ in range(12):
        pid = new_id(STEMS[1], taken)
        assert pid not in taken and len(pid) <= MAX_ID
        taken.add(pid)
