"""The smoke profile's assets: a tiny model, the letters data set and the reward file.

Built into the run directory at each smoke run's launch by the trainer's interpreter
(``assets.py``; no torch import), so a run needs nothing but the patched tree and verl's own
dependencies, and patchctl's own process none of them.
"""

from __future__ import annotations

from pathlib import Path

from patchctl.train import data
from patchctl.train.tinymodel import TinyModelSpec, make_tiny_model

#: 40 steps of 16 prompts in one epoch: the learning gate compares steps 1-5 with 36-40
TRAIN_ROWS, VAL_ROWS = 640, 16
#: the vLLM rollout's model: head size 64, which vLLM's FlashAttention 3 takes on an H100 (the
#: default spec's 32 it does not); the shape the 0.9.1 + vLLM 0.24 run proved (docs/validation/vllm)
VLLM_SPEC = TinyModelSpec(hidden=256, layers=2, heads=4, kv_heads=2, intermediate=512)


def reward_file() -> Path:
    return Path(__file__).resolve().with_name("smoke_reward.py")


def sampler_file() -> Path:
    return Path(__file__).resolve().with_name("smoke_sampler.py")


def paths(assets: Path) -> dict[str, str]:
    """The placeholder values of the smoke profile, whether or not the assets exist yet."""
    return {
        "MODEL_PATH": str(assets / "model"),
        "DATA_DIR": str(assets / "data"),
        "REWARD_FILE": str(reward_file()),
        "SAMPLER_FILE": str(sampler_file()),
    }


def build(assets: Path, tokenizer: str = "word") -> dict[str, str]:
    """The model (``tokenizer`` "word" for transformers 4.x, "bytes" for >= 5), data and reward."""
    values = paths(assets)
    ds = data.synthetic_text(Path(values["DATA_DIR"]), TRAIN_ROWS, VAL_ROWS)
    spec = VLLM_SPEC if tokenizer == "bytes" else TinyModelSpec()
    make_tiny_model(Path(values["MODEL_PATH"]), ds.words, spec, tokenizer=tokenizer)
    return values
