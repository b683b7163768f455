"""Data and model paths: real parquet files written with pyarrow, constructed model directories."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from patchctl.preflight import Status
from patchctl.preflight.checks_data import judge_model


def write_parquet(path: Path, rows: int = 4, prompt: bool = True) -> Path:
    cols = {"data_source": ["fake"] * rows, "reward_model": [{"ground_truth": "A"}] * rows}
    if prompt:
        cols["prompt"] = [[{"role": "user", "content": f"question {i}"}] for i in range(rows)]
    pq.write_table(pa.table(cols), path)
    return path


@pytest.fixture
def data_dir(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    write_parquet(d / "train.parquet", 8)
    write_parquet(d / "test.parquet", 2)
    write_parquet(d / "train_tiny.parquet", 2)
    return d


def data_ctx(make_ctx, data_dir):
    return make_ctx(paths={"DATA_DIR": str(data_dir)}, paths_source="cluster gpu in patchctl.toml")


def test_complete_dataset(one, make_ctx, data_dir):
    r = one(data_ctx(make_ctx, data_dir), "data")
    assert r.status is Status.PASS
    assert "test.parquet 2 rows, train.parquet 8 rows, train_tiny.parquet 2 rows (read with pyarrow)" in r.value
    assert "(cluster gpu in patchctl.toml)" in r.value


def test_truncated_parquet(one, make_ctx, data_dir):
    f = data_dir / "train.parquet"
    f.write_bytes(f.read_bytes()[:-40])
    r = one(data_ctx(make_ctx, data_dir), "data")
    assert r.status is Status.FAIL and "train.parquet:" in r.value and "copy the files again" in r.fix


def test_footer_check_without_pyarrow(one, make_ctx, data_dir, fake_site):
    f = data_dir / "test.parquet"
    f.write_bytes(f.read_bytes()[:-10])
    site = fake_site({"pyarrow/__init__.py": "raise ImportError('no pyarrow here')\n"})
    r = one(make_ctx({"PYTHONPATH": site}, paths={"DATA_DIR": str(data_dir)}), "data")
    assert r.status is Status.FAIL and "test.parquet: truncated or damaged (no valid footer)" in r.value


def test_missing_required_file(one, make_ctx, data_dir):
    (data_dir / "test.parquet").unlink()
    r = one(data_ctx(make_ctx, data_dir), "data")
    assert r.status is Status.FAIL and r.value.endswith("missing test.parquet")


def test_missing_debug_file(one, make_ctx, data_dir):
    (data_dir / "train_tiny.parquet").unlink()
    r = one(data_ctx(make_ctx, data_dir), "data")
    assert r.status is Status.WARN and "create_tiny_dataset.py" in r.fix


def test_no_prompt_column(one, make_ctx, data_dir):
    write_parquet(data_dir / "train.parquet", prompt=False)
    r = one(data_ctx(make_ctx, data_dir), "data")
    assert r.status is Status.WARN and "no 'prompt' column in train.parquet" in r.value


def test_data_dir_absent_or_unknown(one, make_ctx, tmp_path):
    r = one(make_ctx(paths={"DATA_DIR": str(tmp_path / "nope")}, paths_source="environment"), "data")
    assert r.status is Status.FAIL and "no such directory" in r.value
    assert one(make_ctx(), "data").status is Status.SKIP


def safetensors(path: Path, tensor_bytes: int = 16, cut: int = 0) -> Path:
    header = json.dumps(
        {
            "w": {"dtype": "F32", "shape": [tensor_bytes // 4], "data_offsets": [0, tensor_bytes]},
            "__metadata__": {"format": "pt"},
        }
    ).encode()
    blob = struct.pack("<Q", len(header)) + header + b"\0" * tensor_bytes
    path.write_bytes(blob[: len(blob) - cut])
    return path


@pytest.fixture
def model(tmp_path):
    m = tmp_path / "Qwen2.5-VL-3B-Instruct"
    m.mkdir()
    (m / "config.json").write_text(
        json.dumps({"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl"})
    )
    safetensors(m / "model-00001-of-00002.safetensors")
    safetensors(m / "model-00002-of-00002.safetensors")
    (m / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})
    )
    (m / "tokenizer.json").write_text("{}")
    return m


def test_good_model(model):
    v = judge_model(str(model), "git_ignore.py")
    assert v.status is Status.PASS and "Qwen2_5_VLForConditionalGeneration, 2 safetensors file(s)" in v.value


def test_model_check_through_the_registry(one, make_ctx, model):
    assert one(make_ctx(paths={"MODEL_PATH": str(model)}), "model").status is Status.PASS


@pytest.mark.parametrize(
    "breakage,status,text",
    [
        (lambda m: (m / "config.json").unlink(), Status.FAIL, "no config.json"),
        (lambda m: (m / "config.json").write_text("{not json"), Status.FAIL, "config.json is not valid JSON"),
        (lambda m: safetensors(m / "model-00002-of-00002.safetensors", cut=5), Status.FAIL, "truncated"),
        (lambda m: (m / "model-00002-of-00002.safetensors").unlink(), Status.FAIL, "lists 1 missing shard"),
        (
            lambda m: (m / "model-00001-of-00002.safetensors").write_bytes(b"PK\x03\x04 a zip, not safetensors"),
            Status.FAIL,
            "header length exceeds the file",
        ),
        (lambda m: (m / "tokenizer.json").unlink(), Status.WARN, "no tokenizer files"),
    ],
)
def test_broken_model_dir(model, breakage, status, text):
    breakage(model)
    v = judge_model(str(model), "cluster gpu")
    assert v.status is status and text in v.value and v.fix


def test_bin_only_model(tmp_path):
    m = tmp_path / "m"
    m.mkdir()
    (m / "config.json").write_text('{"model_type": "llama"}')
    (m / "pytorch_model.bin").write_bytes(b"\0")
    v = judge_model(str(m), "env")
    assert v.status is Status.WARN and "load_format=safetensors" in v.fix


def test_hub_cache_folder_points_at_the_snapshot(model, tmp_path):
    hub = tmp_path / "models--Qwen--Qwen2.5-VL-3B-Instruct"
    (hub / "snapshots").mkdir(parents=True)
    model.rename(hub / "snapshots" / "66285546d2b821cf421d4f5eb2576359d3770cd3")
    v = judge_model(str(hub), "env")
    assert v.status is Status.FAIL and "hub cache folder" in v.value and "snapshots/66285546" in v.fix


def test_no_model_path_is_a_skip(one, make_ctx):
    r = one(make_ctx(), "model")
    assert r.status is Status.SKIP and "MODEL_PATH" in r.fix
