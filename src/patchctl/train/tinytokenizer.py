"""The tiny smoke model's tokenizers, word-level or byte-level, made offline with ``tokenizers``.

Two tokenizers. The word-level one suits transformers 4.x (verl <= 0.5). transformers 5 loads the
tokenizer of every ``qwen2`` model as ``Qwen2Tokenizer`` whatever ``tokenizer_config.json`` names,
and that class rebuilds a byte-level BPE from the file's vocabulary and merges: a word-level
vocabulary then loses its words (``tok("say b")`` gives the ids of "a" and "b"). ``tokenizer="bytes"``
trains a byte-level BPE on the task's words instead (what docs/validation/vllm/make_assets.py
proved on verl 0.9.1), with only the bytes the task uses as its alphabet, so the model's
vocabulary stays a few dozen tokens and a random policy still hits the task's letters by chance.

Apart from ``tinymodel.py`` (the weights and the checkpoint's files) because which tokenizer a
transformers release needs is a question of its own; ``tokenizers`` is imported inside the
functions, as the trainer's interpreter runs them and patchctl's never does.
"""

from __future__ import annotations

from patchctl.errors import TokenizersMissing

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<|im_start|>", "<|im_end|>"
SPECIAL = (PAD, UNK, BOS, EOS)

#: Qwen2's pre-tokenizer split (the one Qwen2Tokenizer uses), then byte-level
QWEN2_SPLIT = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)


def bpe_tokenizer_json(texts: list[str] | tuple[str, ...], vocab_size: int = 96) -> str:
    """A byte-level BPE (JSON) trained on ``texts``: the special tokens first (ids 0-3, as the
    word-level vocabulary has them), then only the bytes ``texts`` use, then merges."""
    try:
        from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    except ImportError:
        raise TokenizersMissing() from None

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    # the newline too, which the task's words lack but the chat template has: verl 0.9.1's agent
    # loop refuses a tokenizer that does not encode "\n" to exactly one token (found on the H100:
    # "Expected Qwen newline to tokenize to one token, got []")
    alphabet = sorted({c for t in [*texts, "\n"] for c in pre_tokenizers.ByteLevel.alphabet() if c in _bytelevel(t)})
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL),
        show_progress=False,
        initial_alphabet=alphabet,
        limit_alphabet=len(alphabet),
    )
    tok.train_from_iterator(list(texts), trainer)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL])
    return tok.to_str()


def _bytelevel(text: str) -> str:
    """``text`` in the byte-level alphabet (a space is "Ġ"), as the BPE sees it."""
    from tokenizers import pre_tokenizers

    return "".join(piece for piece, _ in pre_tokenizers.ByteLevel(add_prefix_space=False).pre_tokenize_str(text))


def word_tokenizer_json(vocab: tuple[str, ...]) -> str:
    try:
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    except ImportError:
        raise TokenizersMissing() from None

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    # WordLevel has no decoder of its own; WordPiece's joins words with spaces (no "##" here)
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL])
    return tok.to_str()
