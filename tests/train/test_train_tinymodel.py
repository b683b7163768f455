"""The tiny model and tokenizer: loadable by transformers, chat template, round trips.

Everything here runs on what the test extra installs (numpy, safetensors, tokenizers,
transformers without torch): the model is checked against Qwen2's layout and run by a numpy
forward pass written from the architecture, so CI proves it without a torch install.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from patchctl.train.tinymodel import BOS, EOS, PAD, make_tiny_model, write_safetensors
from realparts import unavailable

WORDS = ["say", "a", "b", "c", "d"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    made = make_tiny_model(tmp_path_factory.mktemp("tiny") / "model", WORDS)
    assert made.parameters == 297_600
    assert made.vocab[:4] == (PAD, "<unk>", BOS, EOS)
    return made.path


def test_files_and_config(model_dir: Path) -> None:
    cfg = json.loads((model_dir / "config.json").read_text())
    assert cfg["model_type"] == "qwen2" and cfg["architectures"] == ["Qwen2ForCausalLM"]
    assert cfg["vocab_size"] == 12 and cfg["eos_token_id"] == 3 and cfg["pad_token_id"] == 0
    assert {p.name for p in model_dir.iterdir()} == {
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
    }


def test_safetensors_layout(tmp_path: Path) -> None:
    import safetensors.numpy as safetensors

    tensors = {"b": np.arange(6, dtype=np.float32).reshape(2, 3), "a": np.ones(3, np.float32)}
    write_safetensors(tmp_path / "m.safetensors", tensors)
    back = safetensors.load_file(str(tmp_path / "m.safetensors"))
    assert set(back) == {"a", "b"} and (back["b"] == tensors["b"]).all()


def test_tokenizer_round_trip(model_dir: Path, tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    ids = tok.encode("say b").ids
    assert ids == [7, 9] and tok.decode(ids) == "say b"
    transformers = _transformers()
    fast = transformers.PreTrainedTokenizerFast.from_pretrained(str(model_dir))
    assert (fast.eos_token, fast.pad_token, fast.padding_side) == (EOS, PAD, "left")
    text = fast.apply_chat_template([{"role": "user", "content": "say b"}], tokenize=False, add_generation_prompt=True)
    assert text == f"{BOS}user say b {EOS} {BOS}assistant "
    encoded = fast(text)["input_ids"]
    assert encoded == [2, 5, 7, 9, 3, 2, 6]
    assert fast.decode(encoded, skip_special_tokens=True) == "user say b assistant"
    assert fast.decode(fast("a b c d")["input_ids"]) == "a b c d"
    fast.save_pretrained(tmp_path / "saved")
    again = transformers.PreTrainedTokenizerFast.from_pretrained(str(tmp_path / "saved"))
    assert again("say b")["input_ids"] == fast("say b")["input_ids"]
    if int(transformers.__version__.split(".")[0]) < 5:  # verl's AutoTokenizer path (transformers 4.x)
        auto = transformers.AutoTokenizer.from_pretrained(str(model_dir))
        assert auto.decode(auto("say b")["input_ids"]) == "say b"


def _transformers() -> ModuleType:
    """transformers (the test extra has it; torch is not needed for tokenizers): a developer's
    venv without it skips, CI (where a skip would hide a test that never ran) fails."""
    try:
        import jinja2  # noqa: F401  (transformers renders chat templates with it)
        import transformers
    except ImportError as exc:
        unavailable(f"{exc.name} is missing: pip install -e '.[test]'")
    return transformers


def _qwen2_shapes(cfg: dict) -> dict[str, tuple[int, ...]]:
    """Every tensor Qwen2ForCausalLM loads, by name and shape, from its config (transformers'
    modeling_qwen2: biases on q/k/v only, grouped k/v heads, the head tied to the embedding)."""
    hidden, inter, vocab = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    kv = cfg["num_key_value_heads"] * hidden // cfg["num_attention_heads"]
    out = {"model.embed_tokens.weight": (vocab, hidden), "model.norm.weight": (hidden,)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out |= {
            p + "self_attn.q_proj.weight": (hidden, hidden),
            p + "self_attn.q_proj.bias": (hidden,),
            p + "self_attn.k_proj.weight": (kv, hidden),
            p + "self_attn.k_proj.bias": (kv,),
            p + "self_attn.v_proj.weight": (kv, hidden),
            p + "self_attn.v_proj.bias": (kv,),
            p + "self_attn.o_proj.weight": (hidden, hidden),
            p + "mlp.gate_proj.weight": (inter, hidden),
            p + "mlp.up_proj.weight": (inter, hidden),
            p + "mlp.down_proj.weight": (hidden, inter),
            p + "input_layernorm.weight": (hidden,),
            p + "post_attention_layernorm.weight": (hidden,),
        }
    return out


def _qwen2_logits(w: dict[str, np.ndarray], cfg: dict, ids: list[int]) -> np.ndarray:
    """Qwen2's forward pass in numpy (RMSNorm, rotary positions, causal grouped-query attention,
    SwiGLU, tied head): what transformers computes from these weights, without torch."""
    heads, kv_heads = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    dim = cfg["hidden_size"] // heads
    n = len(ids)

    def norm(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + cfg["rms_norm_eps"]) * weight

    inv = 1.0 / cfg["rope_theta"] ** (np.arange(0, dim, 2) / dim)
    angles = np.concatenate([np.outer(np.arange(n), inv)] * 2, axis=-1)[:, None, :]

    def rotate(x: np.ndarray) -> np.ndarray:  # (n, heads, dim)
        half = np.concatenate([-x[..., dim // 2 :], x[..., : dim // 2]], axis=-1)
        return x * np.cos(angles) + half * np.sin(angles)

    x = w["model.embed_tokens.weight"][ids]
    causal = np.triu(np.full((n, n), -np.inf), 1)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = norm(x, w[p + "input_layernorm.weight"])
        q, k, v = (h @ w[p + f"self_attn.{t}_proj.weight"].T + w[p + f"self_attn.{t}_proj.bias"] for t in "qkv")
        q = rotate(q.reshape(n, heads, dim))
        k = np.repeat(rotate(k.reshape(n, kv_heads, dim)), heads // kv_heads, axis=1)
        v = np.repeat(v.reshape(n, kv_heads, dim), heads // kv_heads, axis=1)
        scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(dim) + causal
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        x = x + np.einsum("hqk,khd->qhd", probs, v).reshape(n, -1) @ w[p + "self_attn.o_proj.weight"].T
        h = norm(x, w[p + "post_attention_layernorm.weight"])
        gate = h @ w[p + "mlp.gate_proj.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    return norm(x, w["model.norm.weight"]) @ w["model.embed_tokens.weight"].T


def test_model_loads_generates_and_saves(model_dir: Path) -> None:
    """The checkpoint has exactly the tensors Qwen2 loads (a missing or misshapen one would be
    silently re-initialised by transformers), and the forward pass and greedy decoding run."""
    import safetensors.numpy

    cfg = json.loads((model_dir / "config.json").read_text())
    weights = safetensors.numpy.load_file(str(model_dir / "model.safetensors"))
    assert {name: a.shape for name, a in weights.items()} == _qwen2_shapes(cfg)
    assert sum(a.size for a in weights.values()) == 297_600 and {a.dtype for a in weights.values()} == {
        np.dtype(np.float32)
    }
    ids = [2, 5, 7, 9, 3, 2, 6]
    logits = _qwen2_logits(weights, cfg, ids)
    assert logits.shape == (7, 12) and np.isfinite(logits).all() and logits.std() > 0
    # causal: a later token never changes an earlier position's logits
    assert np.allclose(_qwen2_logits(weights, cfg, ids[:4]), logits[:4], atol=1e-5)
    out = list(ids)
    while len(out) < len(ids) + 5 and out[-1] != cfg["eos_token_id"]:
        out.append(int(_qwen2_logits(weights, cfg, out)[-1].argmax()))
    assert 7 < len(out) <= 12 and max(out) < cfg["vocab_size"]
    try:  # where torch is installed too: transformers must compute the same logits
        import torch
    except ImportError:
        return
    model = _transformers().AutoModelForCausalLM.from_pretrained(str(model_dir))
    with torch.no_grad():
        theirs = model(torch.tensor([ids])).logits[0].numpy()
    assert np.allclose(theirs, logits, atol=1e-4)
