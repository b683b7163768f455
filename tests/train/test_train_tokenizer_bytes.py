"""The byte-level tokenizer of smoke-vllm, read the way transformers 5's Qwen2Tokenizer reads it.

transformers >= 5 loads every qwen2 model's tokenizer as ``Qwen2Tokenizer``, which rebuilds a
byte-level BPE from the file's vocabulary and merges (its own pre-tokenizer and decoder). The
rebuild is done here with ``tokenizers`` alone, so the test runs without transformers; the
word-level tokenizer, rebuilt the same way, loses the words (``"say b"`` -> "a", "b": only the
single-byte words survive): the broken input this guards.
(Checked by hand with transformers 5.9.0 and tokenizers 0.22.2, verl 0.9.1's pins:
``AutoTokenizer`` gives ``Qwen2Tokenizer``, ``tok("say b")`` -> ``[21, 22]``, decoded "say b".)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchctl.train import smoke_reward
from patchctl.train.tinymodel import BOS, EOS, PAD, QWEN2_SPLIT, make_tiny_model

pytest.importorskip("numpy")
tokenizers = pytest.importorskip("tokenizers")
WORDS = ["say", "a", "b", "c", "d"]


def as_qwen2(model_dir: Path) -> tokenizers.Tokenizer:
    """The tokenizer Qwen2Tokenizer builds from tokenizer.json's vocab and merges."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    doc = json.loads((model_dir / "tokenizer.json").read_text())
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in doc["model"].get("merges", [])]
    tok = Tokenizer(models.BPE(vocab=doc["model"]["vocab"], merges=merges))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    return tok


def test_bytes_tokenizer_survives_the_qwen2_rebuild(tmp_path: Path) -> None:
    made = make_tiny_model(tmp_path / "m", WORDS, tokenizer="bytes")
    assert made.vocab[:4] == (PAD, "<unk>", BOS, EOS)
    assert len(made.vocab) < 64  # a few dozen tokens: a random policy still hits the letters
    cfg = json.loads((made.path / "config.json").read_text())
    assert cfg["vocab_size"] == len(made.vocab) and cfg["eos_token_id"] == 3
    assert json.loads((made.path / "tokenizer_config.json").read_text())["tokenizer_class"] == "Qwen2Tokenizer"
    tok = as_qwen2(made.path)
    for text in ("say b", "b b b", "user say a", " c d"):
        ids = tok.encode(text).ids
        assert ids and tok.decode(ids) == text


def test_word_tokenizer_loses_the_words_there(tmp_path: Path) -> None:
    """Why smoke-vllm needs the byte-level one: the word-level vocabulary loses the words (transformers
    5.9.0 gives the same ids, [8, 9], for "say b")."""
    made = make_tiny_model(tmp_path / "m", WORDS)
    tok = as_qwen2(made.path)
    assert tok.encode("say b").ids == [8, 9] and tok.decode([8, 9]) == "ab"


def test_unknown_tokenizer_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="tokenizer 'chars' is not one of word, bytes"):
        make_tiny_model(tmp_path / "m", WORDS, tokenizer="chars")


def test_char_score() -> None:
    score = smoke_reward.compute_char_score
    assert score("s", "b b b", "b") == 1.0
    assert score("s", "bab", "b") == pytest.approx(2 / 3)
    assert score("s", "  ", "b") == 0.0 and score("s", "say", "b") == 0.0


def test_bytes_tokenizer_encodes_the_newline_to_one_token(tmp_path: Path) -> None:
    """verl 0.9.1's agent loop (continuous_token.py) refuses a tokenizer whose "\\n" is not one
    token; the task's words have no newline, and an alphabet of their bytes alone encoded it to
    nothing (the smoke-vllm run on the H100 stopped at its first step)."""
    model = make_tiny_model(tmp_path / "m", WORDS, tokenizer="bytes")
    tok = as_qwen2(model.path)
    assert len(tok.encode("\n").ids) == 1
    assert tok.decode(tok.encode("say b\nsay c").ids) == "say b\nsay c"


def test_smoke_bytes_assets(tmp_path: Path) -> None:
    """What ``smoke-vllm`` gets: head size 64 (vLLM's FlashAttention 3), the byte-level tokenizer."""
    pytest.importorskip("pyarrow")
    from patchctl.train import smoke

    values = smoke.build(tmp_path, "bytes")
    cfg = json.loads((Path(values["MODEL_PATH"]) / "config.json").read_text())
    assert cfg["hidden_size"] // cfg["num_attention_heads"] == 64
    assert as_qwen2(Path(values["MODEL_PATH"])).encode("say d").ids
