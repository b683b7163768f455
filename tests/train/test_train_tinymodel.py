"""The tiny model and tokenizer: loadable by transformers, chat template, round trips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchctl.train.tinymodel import BOS, EOS, PAD, make_tiny_model, write_safetensors

np = pytest.importorskip("numpy")
pytest.importorskip("tokenizers")

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
    assert {p.name for p in model_dir.iterdir()} == {"config.json", "generation_config.json", "model.safetensors",
                                                     "tokenizer.json", "tokenizer_config.json",
                                                     "special_tokens_map.json"}


def test_safetensors_layout(tmp_path: Path) -> None:
    safetensors = pytest.importorskip("safetensors.numpy")
    tensors = {"b": np.arange(6, dtype=np.float32).reshape(2, 3), "a": np.ones(3, np.float32)}
    write_safetensors(tmp_path / "m.safetensors", tensors)
    back = safetensors.load_file(str(tmp_path / "m.safetensors"))
    assert set(back) == {"a", "b"} and (back["b"] == tensors["b"]).all()


def test_tokenizer_round_trip(model_dir: Path, tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    ids = tok.encode("say b").ids
    assert ids == [7, 9] and tok.decode(ids) == "say b"
    transformers = pytest.importorskip("transformers")
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


def test_model_loads_generates_and_saves(model_dir: Path, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = transformers.AutoModelForCausalLM.from_pretrained(str(model_dir))
    assert type(model).__name__ == "Qwen2ForCausalLM"
    assert sum(p.numel() for p in model.parameters()) == 297_600
    ids = torch.tensor([[2, 5, 7, 9, 3, 2, 6]])
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=5, do_sample=True,
                         pad_token_id=0, eos_token_id=3)
    assert out.shape[0] == 1 and 7 < out.shape[1] <= 12 and int(out.max()) < 12
    logits = model(ids).logits
    assert logits.shape == (1, 7, 12) and torch.isfinite(logits).all()
    model.save_pretrained(tmp_path / "saved")
    again = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path / "saved"))
    assert torch.allclose(again(ids).logits, logits)
