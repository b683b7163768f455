"""Data sets in verl's RLHF parquet layout: the record's 2-sample set and synthetic ones.

verl's ``RLHFDataset`` reads a parquet file whose rows carry ``data_source`` (selects the reward
function), ``prompt`` (chat messages), ``ability``, ``reward_model`` (``style`` and
``ground_truth``) and ``extra_info``; vision-language rows add ``images``, a list of
``{"bytes": PNG}`` with one image per ``<image>`` placeholder in the prompt. Every writer here
uses one explicit arrow schema so the column types do not depend on the pandas version.
"""

from __future__ import annotations

import random
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the data_source of the smoke task; its reward is patchctl's own rule (smoke_reward.py)
SMOKE_SOURCE = "patchctl/smoke-letters"
SMOKE_LETTERS = ("a", "b", "c", "d")
#: the record's tiny set uses verl's geo3k rule reward (answer in \boxed{})
TINY_SOURCE = "hiyouga/geometry3k"
TINY_NAME = "train_tiny.parquet"
VL_INSTRUCTION = (
    "Think about the question step by step inside <think> </think> tags, then give the final answer inside \\boxed{}."
)
SQUARES_QUESTION = "How many red squares are in the image?"


@dataclass(frozen=True)
class DataSet:
    train: Path
    val: Path | None
    rows: int
    #: every word the prompts use (the tiny tokenizer's vocabulary is built from it)
    words: tuple[str, ...] = ()


def schema(with_images: bool) -> Any:
    import pyarrow as pa

    fields = [
        ("data_source", pa.string()),
        ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
        (
            "extra_info",
            pa.struct(
                [("split", pa.string()), ("index", pa.int64()), ("answer", pa.string()), ("question", pa.string())]
            ),
        ),
    ]
    if with_images:
        fields.insert(2, ("images", pa.list_(pa.struct([("bytes", pa.binary())]))))
    return pa.schema(fields)


def write_rows(path: Path, rows: list[dict[str, Any]], with_images: bool) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(pa.Table.from_pylist(rows, schema=schema(with_images)), tmp)
    tmp.replace(path)
    return path


# -- tiny PNG images --------------------------------------------------------------------------


def png(width: int, height: int, rows: list[bytearray]) -> bytes:
    """8-bit RGB PNG from rows of ``3 * width`` bytes; no imaging library needed."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))

    raw = b"".join(b"\x00" + bytes(r) for r in rows)
    head = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def squares(count: int, size: int = 56, square: int = 8) -> bytes:
    """A white image with ``count`` red squares on a grid (56 px: 2x2 Qwen2.5-VL patches of 28)."""
    per_row = max(1, size // (2 * square))
    if not 0 <= count <= per_row * per_row:
        raise ValueError(f"{count} squares do not fit in a {size}px image (at most {per_row * per_row})")
    rows = [bytearray(b"\xff" * (3 * size)) for _ in range(size)]
    for i in range(count):
        top, left = (i // per_row) * 2 * square + square // 2, (i % per_row) * 2 * square + square // 2
        for y in range(top, min(top + square, size)):
            for x in range(left, min(left + square, size)):
                rows[y][3 * x : 3 * x + 3] = b"\xdc\x14\x14"
    return png(size, size, rows)


# -- the sets ---------------------------------------------------------------------------------


def _vl_rows(n: int, split: str, source: str, size: int, rng: random.Random | None) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        count = rng.randint(1, 9) if rng else i % 9 + 1
        answer = str(count)
        rows.append(
            {
                "data_source": source,
                "prompt": [{"role": "user", "content": f"<image>{SQUARES_QUESTION} {VL_INSTRUCTION}"}],
                "images": [{"bytes": squares(count, size=size, square=max(4, size // 7))}],
                "ability": "math",
                "reward_model": {"style": "rule", "ground_truth": answer},
                "extra_info": {"split": split, "index": i, "answer": answer, "question": SQUARES_QUESTION},
            }
        )
    return rows


def tiny_dataset(out_dir: Path, samples: int = 2) -> DataSet:
    """The record's ``create_tiny_dataset``: ``train_tiny.parquet`` with 2 image questions.

    Same rows as the ``create_tiny_dataset.py`` the ``uky`` patchset ships (geo3k source, red
    squares to count, 112 px images), so the DEBUG profile trains and validates on it.
    """
    if samples < 1:
        raise ValueError("samples must be at least 1")
    path = write_rows(Path(out_dir) / TINY_NAME, _vl_rows(samples, "train", TINY_SOURCE, 112, None), True)
    return DataSet(path, path, samples)


def synthetic_vl(out_dir: Path, train: int = 64, val: int = 8, seed: int = 0, size: int = 56) -> DataSet:
    """A generated vision-language set (count the squares), ``train.parquet`` and ``test.parquet``."""
    rng = random.Random(seed)  # noqa: S311 - reproducible synthetic data, not a secret
    out = Path(out_dir)
    tr = write_rows(out / "train.parquet", _vl_rows(train, "train", TINY_SOURCE, size, rng), True)
    te = write_rows(out / "test.parquet", _vl_rows(val, "test", TINY_SOURCE, size, rng), True)
    return DataSet(tr, te, train + val)


def letter_prompt(letter: str) -> str:
    return f"say {letter}"


def synthetic_text(
    out_dir: Path, train: int = 256, val: int = 32, seed: int = 0, letters: tuple[str, ...] = SMOKE_LETTERS
) -> DataSet:
    """The smoke task: "say b" -> the reward is the share of response words equal to "b".

    A randomly initialised model starts near 1/vocabulary and learns within ~40 GRPO steps to
    repeat the letter it was asked for, which is what the smoke profile's learning gate checks.
    """
    rng = random.Random(seed)  # noqa: S311 - reproducible synthetic data, not a secret
    out = Path(out_dir)

    def rows(n: int, split: str) -> list[dict[str, Any]]:
        made = []
        for i in range(n):
            letter = rng.choice(letters)
            made.append(
                {
                    "data_source": SMOKE_SOURCE,
                    "prompt": [{"role": "user", "content": letter_prompt(letter)}],
                    "ability": "copy",
                    "reward_model": {"style": "rule", "ground_truth": letter},
                    "extra_info": {"split": split, "index": i, "answer": letter, "question": letter_prompt(letter)},
                }
            )
        return made

    tr = write_rows(out / "train.parquet", rows(train, "train"), False)
    te = write_rows(out / "test.parquet", rows(val, "test"), False)
    return DataSet(tr, te, train + val, tuple(letter_prompt(letters[0]).split()[:-1]) + tuple(letters))
