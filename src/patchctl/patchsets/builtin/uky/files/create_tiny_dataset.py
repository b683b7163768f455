#!/usr/bin/env python3
# Uky: write a tiny (2-sample) vision-language dataset for the DEBUG training script.
"""Create train_tiny.parquet: a few image questions in verl's RLHF parquet layout.

The DEBUG script (examples/grpo_trainer/run_qwen2_5_vl-3b_fake_dataset_DEBUG.sh)
trains and validates on this file so that a full pass over the data takes seconds.

Each row has the columns verl's RLHFDataset and default reward function expect,
the same ones examples/data_preprocess/geo3k.py writes:

    data_source   "hiyouga/geometry3k" - selects verl's geo3k rule-based reward
    prompt        [{"role": "user", "content": "<image>How many red squares ..."}]
    images        [{"bytes": <PNG file bytes>}] - one image per <image> placeholder
    ability       "math"
    reward_model  {"style": "rule", "ground_truth": "3"}
    extra_info    {"split": "train", "index": 0, "answer": "3", "question": "..."}

The images are small PNGs (white canvas with N red squares; the answer is N)
drawn with zlib/struct, so no imaging library is needed.

Output directory, first match wins: --out DIR, $DATA_OUTPUT_DIR, DATA_DIR from
git_ignore.py, ./data.

    python3 create_tiny_dataset.py                 # 2 samples
    python3 create_tiny_dataset.py --samples 8 --out /tmp/data
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import zlib

ROOT = os.path.dirname(os.path.abspath(__file__))
OUTPUT_NAME = "train_tiny.parquet"
DATA_SOURCE = "hiyouga/geometry3k"
IMAGE_SIZE = 112  # a multiple of Qwen2.5-VL's 28-pixel patch grid: 4x4 patches, 16 image tokens
SQUARE = 16
INSTRUCTION = (
    "Think about the question step by step inside <think> </think> tags, "
    "then give the final answer inside \\boxed{}."
)


# ---------------------------------------------------------------------------
# Minimal PNG writer (8-bit RGB, no filtering).
# ---------------------------------------------------------------------------


def _png_chunk(kind: bytes, payload: bytes) -> bytes:
    crc = zlib.crc32(kind + payload) & 0xFFFFFFFF
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)


def png_bytes(width: int, height: int, pixels: list[bytearray]) -> bytes:
    """Encode rows of RGB bytes (each 3 * width long) as a PNG file."""
    if len(pixels) != height or any(len(row) != 3 * width for row in pixels):
        raise ValueError("pixel rows do not match the image size")
    raw = b"".join(b"\x00" + bytes(row) for row in pixels)  # filter type 0 on every scanline
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit depth, colour type RGB
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(raw, 9))
        + _png_chunk(b"IEND", b"")
    )


def squares_image(count: int, size: int = IMAGE_SIZE, square: int = SQUARE) -> bytes:
    """A white canvas with `count` red squares laid out on a grid."""
    per_row = max(1, size // (2 * square))
    if count > per_row * per_row:
        raise ValueError(f"at most {per_row * per_row} squares fit in a {size}px image")
    rows = [bytearray(b"\xff" * (3 * size)) for _ in range(size)]
    for i in range(count):
        top = (i // per_row) * 2 * square + square // 2
        left = (i % per_row) * 2 * square + square // 2
        for y in range(top, min(top + square, size)):
            for x in range(left, min(left + square, size)):
                rows[y][3 * x : 3 * x + 3] = b"\xdc\x14\x14"
    return png_bytes(size, size, rows)


# ---------------------------------------------------------------------------
# Dataset.
# ---------------------------------------------------------------------------


def make_rows(samples: int, split: str = "train") -> list[dict]:
    rows = []
    for index in range(samples):
        answer_value = index % 9 + 1  # 1..9 squares
        answer = str(answer_value)
        question = "How many red squares are in the image?"
        rows.append(
            {
                "data_source": DATA_SOURCE,
                "prompt": [{"role": "user", "content": f"<image>{question} {INSTRUCTION}"}],
                "images": [{"bytes": squares_image(answer_value)}],
                "ability": "math",
                "reward_model": {"style": "rule", "ground_truth": answer},
                "extra_info": {"split": split, "index": index, "answer": answer, "question": question},
            }
        )
    return rows


def arrow_schema(pa):
    """The parquet schema of the rows from make_rows()."""
    return pa.schema(
        [
            ("data_source", pa.string()),
            ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
            ("images", pa.list_(pa.struct([("bytes", pa.binary())]))),
            ("ability", pa.string()),
            ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
            (
                "extra_info",
                pa.struct(
                    [("split", pa.string()), ("index", pa.int64()), ("answer", pa.string()), ("question", pa.string())]
                ),
            ),
        ]
    )


def default_output_dir() -> str:
    env_dir = os.environ.get("DATA_OUTPUT_DIR")
    if env_dir:
        return env_dir
    git_ignore = os.path.join(ROOT, "git_ignore.py")
    if os.path.isfile(git_ignore):
        namespace: dict = {"__name__": "git_ignore", "__file__": git_ignore}
        with open(git_ignore, encoding="utf-8") as handle:
            exec(compile(handle.read(), git_ignore, "exec"), namespace)
        if isinstance(namespace.get("DATA_DIR"), str) and namespace["DATA_DIR"]:
            return namespace["DATA_DIR"]
    return os.path.join(os.getcwd(), "data")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=f"Write a tiny {OUTPUT_NAME} for DEBUG training runs.")
    parser.add_argument("--out", metavar="DIR", help="output directory (default: $DATA_OUTPUT_DIR, git_ignore.DATA_DIR, ./data)")
    parser.add_argument("--samples", type=int, default=2, metavar="N", help="number of rows (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.samples < 1:
        parser.error("--samples must be at least 1")

    try:
        import pandas as pd
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        print(f"error: {exc.name} is not installed (pip install pandas pyarrow)", file=sys.stderr)
        return 1

    out_dir = os.path.expanduser(args.out or default_output_dir())
    os.makedirs(out_dir, exist_ok=True)
    out_path = os.path.join(out_dir, OUTPUT_NAME)

    # An explicit schema keeps the column types the same whatever pandas version runs this.
    table = pa.Table.from_pylist(make_rows(args.samples), schema=arrow_schema(pa))
    pq.write_table(table, out_path)

    check = pd.read_parquet(out_path)
    print(f"Wrote {len(check)} sample(s) to {out_path}")
    print(f"Columns: {', '.join(check.columns)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
