"""The data makers, read back with pandas and pyarrow and checked against verl's RLHF layout."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")
pq = pytest.importorskip("pyarrow.parquet")

from patchctl.train import data, smoke  # noqa: E402 - after importorskip: no pandas, no test
from patchctl.train.smoke_reward import compute_score  # noqa: E402 - after importorskip: no pandas, no test

REPO = Path(__file__).resolve().parents[2]
RECORD_MAKER = REPO / "src/patchctl/patchsets/builtin/uky/files/create_tiny_dataset.py"
#: what verl's RLHFDataset and its reward managers read from every row
VERL_COLUMNS = {"data_source", "prompt", "ability", "reward_model", "extra_info"}


def png_size(blob: bytes) -> tuple[int, int]:
    assert blob[:8] == b"\x89PNG\r\n\x1a\n" and blob[12:16] == b"IHDR"
    return struct.unpack(">II", blob[16:24])


def check_rows(frame: pd.DataFrame, images: bool) -> None:
    assert set(frame.columns) >= VERL_COLUMNS
    assert ("images" in frame.columns) == images
    for row in frame.to_dict("records"):
        messages = list(row["prompt"])
        assert messages and set(messages[0]) == {"role", "content"} and messages[0]["role"] == "user"
        assert row["reward_model"]["style"] == "rule" and row["reward_model"]["ground_truth"]
        assert {"split", "index"} <= set(row["extra_info"])
        if images:
            assert messages[0]["content"].count("<image>") == len(row["images"]) == 1
            w, h = png_size(row["images"][0]["bytes"])
            assert w == h and w % 28 == 0


def test_tiny_dataset_is_the_records(tmp_path: Path) -> None:
    ds = data.tiny_dataset(tmp_path / "ours")
    assert ds.train.name == "train_tiny.parquet" and ds.rows == 2
    ours = pd.read_parquet(ds.train)
    check_rows(ours, images=True)
    assert list(ours["data_source"]) == ["hiyouga/geometry3k"] * 2
    if RECORD_MAKER.is_file():  # the uky patchset's own script writes the same table
        subprocess.run(
            [sys.executable, str(RECORD_MAKER), "--out", str(tmp_path / "theirs")], check=True, capture_output=True
        )
        theirs = pq.read_table(tmp_path / "theirs" / "train_tiny.parquet")
        assert pq.read_table(ds.train).equals(theirs)


def test_synthetic_text(tmp_path: Path) -> None:
    ds = data.synthetic_text(tmp_path, train=20, val=4, seed=1)
    train, val = pd.read_parquet(ds.train), pd.read_parquet(ds.val)
    assert (len(train), len(val)) == (20, 4)
    check_rows(train, images=False)
    assert set(train["reward_model"].map(lambda r: r["ground_truth"])) <= set(data.SMOKE_LETTERS)
    assert set(ds.words) == {"say", *data.SMOKE_LETTERS}
    assert pq.read_schema(ds.train).equals(data.schema(False))
    again = data.synthetic_text(tmp_path / "again", train=20, val=4, seed=1)
    assert pq.read_table(again.train).equals(pq.read_table(ds.train))  # deterministic per seed


def test_synthetic_vision_language(tmp_path: Path) -> None:
    ds = data.synthetic_vl(tmp_path, train=6, val=2)
    frame = pd.read_parquet(ds.train)
    check_rows(frame, images=True)
    assert pq.read_schema(ds.train).equals(data.schema(True))
    assert png_size(frame["images"][0][0]["bytes"]) == (56, 56)


def test_squares_bounds() -> None:
    with pytest.raises(ValueError, match="do not fit"):
        data.squares(17, size=56, square=8)


def test_smoke_assets(tmp_path: Path) -> None:
    pytest.importorskip("tokenizers")
    values = smoke.build(tmp_path)
    assert len(pd.read_parquet(Path(values["DATA_DIR"]) / "train.parquet")) == smoke.TRAIN_ROWS
    assert (Path(values["MODEL_PATH"]) / "model.safetensors").is_file()
    assert Path(values["REWARD_FILE"]).name == "smoke_reward.py"


def test_smoke_reward() -> None:
    assert compute_score("patchctl/smoke-letters", "b b b", "b") == 1.0
    assert compute_score("patchctl/smoke-letters", "b a", "b") == 0.5
    assert compute_score("patchctl/smoke-letters", "", "b") == 0.0
    assert compute_score("patchctl/smoke-letters", "bb", "b", extra_info={"index": 0}) == 0.0
