"""A tiny randomly initialised Qwen2 model and its tokenizer (word-level or byte-level), made offline.

The smoke profile needs a model that verl loads like any HuggingFace checkpoint but that costs
nothing to download or build. The weights are written with numpy straight into a safetensors
file (no torch import: building takes milliseconds, which counts towards the smoke run's
time to first step), the tokenizer with the ``tokenizers`` library as a WordLevel model whose
vocabulary is exactly the words the smoke data uses, plus a chat template so verl's
``apply_chat_template`` works as with a real instruct model. numpy and tokenizers are imported
inside the functions: the trainer's interpreter runs them (``assets.py``), patchctl's never does.

The two tokenizers (word-level, byte-level) are made in ``tinytokenizer.py``.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from patchctl.train.tinytokenizer import BOS, EOS, PAD, SPECIAL, UNK, bpe_tokenizer_json, word_tokenizer_json
from patchctl.train.tinytokenizer import QWEN2_SPLIT as QWEN2_SPLIT  # re-exported: the tests import it from here

if TYPE_CHECKING:  # numpy is imported where the weights are made: patchctl itself does not need it
    import numpy as np

ROLES = ("system", "user", "assistant")
#: a ChatML-like template; words are separated by spaces because the tokenizer splits on them
CHAT_TEMPLATE = (
    "{% for message in messages %}" + BOS + "{{ message['role'] }} {{ message['content'] }} " + EOS + " "
    "{% endfor %}{% if add_generation_prompt %}" + BOS + "assistant {% endif %}"
)


@dataclass(frozen=True)
class TinyModelSpec:
    """The architecture; the defaults give ~0.3M parameters, enough to learn the smoke task."""

    hidden: int = 128
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    intermediate: int = 256
    max_positions: int = 512
    seed: int = 0


@dataclass(frozen=True)
class TinyModel:
    #: the model directory (config, weights, tokenizer): what ``model.path`` points at
    path: Path
    vocab: tuple[str, ...]
    parameters: int


def vocabulary(words: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Special tokens, roles, then the task's words in order of first appearance."""
    out: list[str] = [*SPECIAL, *ROLES]
    for w in words:
        if w not in out:
            out.append(w)
    return tuple(out)


def _tensors(spec: TinyModelSpec, vocab_size: int) -> dict[str, np.ndarray]:
    import numpy as np

    rng = np.random.default_rng(spec.seed)
    head_dim = spec.hidden // spec.heads
    kv = spec.kv_heads * head_dim

    def normal(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    t = {
        "model.embed_tokens.weight": normal(vocab_size, spec.hidden),
        "model.norm.weight": np.ones(spec.hidden, np.float32),
    }
    for i in range(spec.layers):
        p = f"model.layers.{i}."
        t.update(
            {
                p + "self_attn.q_proj.weight": normal(spec.hidden, spec.hidden),
                p + "self_attn.q_proj.bias": np.zeros(spec.hidden, np.float32),
                p + "self_attn.k_proj.weight": normal(kv, spec.hidden),
                p + "self_attn.k_proj.bias": np.zeros(kv, np.float32),
                p + "self_attn.v_proj.weight": normal(kv, spec.hidden),
                p + "self_attn.v_proj.bias": np.zeros(kv, np.float32),
                p + "self_attn.o_proj.weight": normal(spec.hidden, spec.hidden),
                p + "mlp.gate_proj.weight": normal(spec.intermediate, spec.hidden),
                p + "mlp.up_proj.weight": normal(spec.intermediate, spec.hidden),
                p + "mlp.down_proj.weight": normal(spec.hidden, spec.intermediate),
                p + "input_layernorm.weight": np.ones(spec.hidden, np.float32),
                p + "post_attention_layernorm.weight": np.ones(spec.hidden, np.float32),
            }
        )
    return t


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """The safetensors layout: u64 header size, a JSON header with offsets, then raw data."""
    import numpy as np

    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset, blobs = 0, []
    for name in sorted(tensors):
        arr = np.ascontiguousarray(tensors[name], dtype="<f4")
        blob = arr.tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for blob in blobs:
            f.write(blob)


def _config(spec: TinyModelSpec, vocab: tuple[str, ...]) -> dict[str, object]:
    return {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "torch_dtype": "float32",
        "vocab_size": len(vocab),
        "hidden_size": spec.hidden,
        "intermediate_size": spec.intermediate,
        "num_hidden_layers": spec.layers,
        "num_attention_heads": spec.heads,
        "num_key_value_heads": spec.kv_heads,
        "max_position_embeddings": spec.max_positions,
        "max_window_layers": spec.layers,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "initializer_range": 0.02,
        "attention_dropout": 0.0,
        "use_cache": True,
        "use_sliding_window": False,
        "sliding_window": None,
        "tie_word_embeddings": True,
        "bos_token_id": vocab.index(BOS),
        "eos_token_id": vocab.index(EOS),
        "pad_token_id": vocab.index(PAD),
    }


TOKENIZERS = ("word", "bytes")


def make_tiny_model(
    dest: Path, words: list[str] | tuple[str, ...], spec: TinyModelSpec = TinyModelSpec(), tokenizer: str = "word"
) -> TinyModel:
    """Write a loadable Qwen2 checkpoint with tokenizer into ``dest`` (created).

    ``tokenizer`` is "word" (transformers 4.x) or "bytes" (a byte-level BPE over ``words``, the
    chat template's text and the roles: what transformers >= 5 needs).
    """
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"tokenizer {tokenizer!r} is not one of {', '.join(TOKENIZERS)}")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    if tokenizer == "bytes":
        texts = (" ".join(ROLES), " ".join(words), *(f"{r} {w} {w} {w}" for r in ROLES for w in words))
        tok_json = bpe_tokenizer_json(texts)
        ids: dict[str, int] = json.loads(tok_json)["model"]["vocab"]
        vocab = tuple(sorted(ids, key=ids.__getitem__))
    else:
        vocab = vocabulary(words)
        tok_json = word_tokenizer_json(vocab)
    tensors = _tensors(spec, len(vocab))
    write_safetensors(dest / "model.safetensors", tensors)
    cfg = _config(spec, vocab)
    (dest / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    (dest / "generation_config.json").write_text(
        json.dumps(
            {
                "bos_token_id": cfg["bos_token_id"],
                "eos_token_id": cfg["eos_token_id"],
                "pad_token_id": cfg["pad_token_id"],
                "do_sample": True,
            },
            indent=2,
        )
        + "\n"
    )
    (dest / "tokenizer.json").write_text(tok_json)
    (dest / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "Qwen2Tokenizer" if tokenizer == "bytes" else "PreTrainedTokenizerFast",
                "model_max_length": spec.max_positions,
                "bos_token": BOS,
                "eos_token": EOS,
                "pad_token": PAD,
                "unk_token": UNK,
                "padding_side": "left",
                "clean_up_tokenization_spaces": False,
                "chat_template": CHAT_TEMPLATE,
            },
            indent=2,
        )
        + "\n"
    )
    (dest / "special_tokens_map.json").write_text(
        json.dumps({"bos_token": BOS, "eos_token": EOS, "pad_token": PAD, "unk_token": UNK}, indent=2) + "\n"
    )
    return TinyModel(dest, vocab, sum(int(a.size) for a in tensors.values()))
