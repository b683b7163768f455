#!/usr/bin/env python3
"""The offline model, data and cluster entry of the vLLM validation run.

* the record's tiny data set: ``train_tiny.parquet``, 2 image questions (``create_tiny_dataset``'s
  rows, made by ``patchctl.train.data.tiny_dataset``);
* a tiny random Qwen2 made by the smoke model maker (``patchctl.train.tinymodel``), saved as
  safetensors with its tokenizer and chat template. The shape fits vLLM's FlashAttention: head
  size 64 (hidden 256, 4 query heads, 2 KV heads), and 4096 positions (the profiles' prompt +
  response is at most 576 tokens here);
* its tokenizer replaced by a byte-level BPE one trained on the data set's text: transformers 5
  (verl 0.9.1 pins 5.9.0) loads every ``qwen2`` model's tokenizer as ``Qwen2Tokenizer``, whatever
  ``tokenizer_config.json`` names (qwen2 is in its MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS), and
  ``Qwen2Tokenizer`` rebuilds a byte-level BPE from the file's vocabulary: the smoke maker's
  word-level vocabulary then encodes every word to nothing (``tok("How many")`` -> ``[]``). The
  model's vocabulary size is the BPE's; the special tokens keep their ids (pad 0, unk 1,
  <|im_start|> 2, <|im_end|> 3), so config.json stays as the maker wrote it;
* ``train.parquet`` and ``test.parquet``: copies of it (the fast-load profile requires them);
* ``patchctl.toml`` with a cluster ``gpu`` whose ``[paths]`` name them (what ``--cluster`` reads).

The model is a text model: the record's data set's images are not fed to it (verl gives a model
without an image processor the prompt text only, ``<image>`` included).

usage: PYTHONPATH=src python3 docs/validation/vllm/make_assets.py DIR   -> DIR/{model,data,patchctl.toml}
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from patchctl.train.data import SQUARES_QUESTION, VL_INSTRUCTION, tiny_dataset
from patchctl.train.tinymodel import SPECIAL, TinyModelSpec, make_tiny_model, vocabulary

#: Qwen2's pre-tokenizer split (the one Qwen2Tokenizer uses), then byte-level
QWEN2_SPLIT = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
               r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
SPEC = TinyModelSpec(hidden=256, layers=2, heads=4, kv_heads=2, intermediate=512, max_positions=4096, seed=0)


def bpe_tokenizer(texts: list[str]) -> tuple[str, int]:
    """A byte-level BPE tokenizer (JSON) trained on ``texts``, special tokens first."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=list(SPECIAL), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    return tok.to_str(), tok.get_vocab_size()


def main(out: Path) -> None:
    out = out.resolve()
    data = tiny_dataset(out / "data")
    text = f"<image>{SQUARES_QUESTION} {VL_INSTRUCTION} <think> </think> \\boxed{{}}"
    texts = [f"system user assistant {text}", " ".join(str(i) for i in range(10)), "\\boxed{3} 12 345"]
    tokenizer, size = bpe_tokenizer(texts)
    # the maker's vocabulary is SPECIAL + roles + words: pad it to the BPE's size
    model = make_tiny_model(out / "model", [f"w{i}" for i in range(size - len(vocabulary([])))], SPEC)
    (model.path / "tokenizer.json").write_text(tokenizer)
    cfg_file = model.path / "tokenizer_config.json"
    cfg = json.loads(cfg_file.read_text())
    cfg["tokenizer_class"] = "Qwen2Tokenizer"
    cfg_file.write_text(json.dumps(cfg, indent=2) + "\n")
    # the fast-load profile checks for the full data set's files before it starts; this run points
    # its data.train_files/val_files at train_tiny.parquet, so the same rows stand in for them
    for name in ("train.parquet", "test.parquet"):
        shutil.copyfile(data.train, out / "data" / name)
    (out / "patchctl.toml").write_text(
        "[clusters.gpu]\n"
        'hosts = ["localhost"]\n'
        f'root = "{out}"\n'
        "[clusters.gpu.paths]\n"
        f'MODEL_PATH = "{model.path}"\n'
        f'DATA_DIR = "{out / "data"}"\n')
    print(json.dumps({"model": str(model.path), "parameters": model.parameters, "vocab": len(model.vocab),
                      "head_dim": SPEC.hidden // SPEC.heads, "data": str(data.train), "rows": data.rows}))


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
