"""Checks of the cluster's data and model paths: the parquet files open, the model directory is
loadable (config.json, complete safetensors)."""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from patchctl.preflight.base import Check
from patchctl.preflight.model import Context, Status, Verdict
from patchctl.preflight.probe import Probe, ProbeResult

#: what the uky scripts read: train/test for the standard and FAST_LOAD runs, train_tiny for DEBUG
REQUIRED = ("train.parquet", "test.parquet")
DEBUG_ONLY = "train_tiny.parquet"
WHERE_FIX = "pass --cluster with paths.{key}, export {key}, or set {key} in the target's git_ignore.py"


def data_files(ctx: Context) -> list[str]:
    files = []
    data_dir = ctx.paths.get("DATA_DIR")
    if data_dir and Path(data_dir).is_dir():
        files = sorted(str(p) for p in Path(data_dir).glob("*.parquet"))
    files += [v for k, v in ctx.paths.items() if v.endswith(".parquet") and Path(v).is_file() and v not in files]
    return files


DATA = Probe("data", "data_info.py", args=lambda ctx: {"files": data_files(ctx)})


class DataCheck(Check):
    name, title, probes = "data", "Data files", (DATA,)

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        data_dir = ctx.paths.get("DATA_DIR")
        if not data_dir:
            return Verdict(Status.SKIP, "no DATA_DIR known", WHERE_FIX.format(key="DATA_DIR"))
        origin = f"DATA_DIR={data_dir} ({ctx.paths_source})"
        if not Path(data_dir).is_dir():
            return Verdict(
                Status.FAIL,
                f"{origin}: no such directory",
                f"copy the data there or fix DATA_DIR in {ctx.paths_source}",
            )
        found = data["data"].data
        files: dict[str, dict[str, Any]] = found.get("files", {})
        if not files:
            return Verdict(
                Status.FAIL,
                f"{origin}: no .parquet files",
                "create the dataset (train.parquet, "
                "test.parquet; python3 create_tiny_dataset.py for train_tiny.parquet)",
            )
        broken = {Path(p).name: f["error"] for p, f in files.items() if "error" in f}
        if broken:
            listed = "; ".join(f"{n}: {e}" for n, e in broken.items())
            return Verdict(
                Status.FAIL,
                f"{origin}: {listed}",
                "copy the files again (a partial copy loses the footer) or regenerate them",
            )
        names = {Path(p).name for p in files}
        rows = ", ".join(
            f"{Path(p).name} {f['rows']} rows" if "rows" in f else f"{Path(p).name} ok" for p, f in files.items()
        )
        value = f"{origin}: {rows} (read with {found.get('reader')})"
        missing = [n for n in REQUIRED if n not in names]
        if missing:
            return Verdict(
                Status.FAIL,
                f"{value}; missing {', '.join(missing)}",
                "the standard and FAST_LOAD scripts read train.parquet and test.parquet from DATA_DIR",
            )
        no_prompt = [Path(p).name for p, f in files.items() if "columns" in f and "prompt" not in f["columns"]]
        if no_prompt:
            return Verdict(
                Status.WARN,
                f"{value}; no 'prompt' column in {', '.join(no_prompt)}",
                "verl's RLHF dataset reads data.prompt_key (default prompt): set it to the column name",
            )
        if DEBUG_ONLY not in names:
            return Verdict(
                Status.WARN, f"{value}; no {DEBUG_ONLY}", "the DEBUG script needs it: python3 create_tiny_dataset.py"
            )
        return Verdict(Status.PASS, value)


def safetensors_problem(path: Path) -> str | None:
    """Why a .safetensors file cannot load, from its header alone; None when it is whole."""
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) < 8:
            return "shorter than a header"
        (n,) = struct.unpack("<Q", head)
        if n > size - 8 or n > 100 * 2**20:
            return "header length exceeds the file (not safetensors, or truncated)"
        try:
            header = json.loads(f.read(n))
        except ValueError:
            return "header is not JSON"
    ends = [t["data_offsets"][1] for k, t in header.items() if k != "__metadata__" and "data_offsets" in t]
    if ends and 8 + n + max(ends) > size:
        return f"truncated: {size} bytes, tensors need {8 + n + max(ends)}"
    return None


def judge_model(path_str: str | None, source: str) -> Verdict:
    if not path_str:
        return Verdict(Status.SKIP, "no MODEL_PATH known", WHERE_FIX.format(key="MODEL_PATH"))
    path = Path(path_str)
    origin = f"MODEL_PATH={path} ({source})"
    if not path.is_dir():
        return Verdict(
            Status.FAIL, f"{origin}: no such directory", f"download the model there or fix MODEL_PATH in {source}"
        )
    config = path / "config.json"
    if not config.is_file():
        snaps = sorted((path / "snapshots").glob("*/config.json")) if (path / "snapshots").is_dir() else []
        fix = (
            f"point MODEL_PATH at the snapshot: {snaps[-1].parent}"
            if snaps
            else "MODEL_PATH must be the directory holding config.json and the weights"
        )
        return Verdict(Status.FAIL, f"{origin}: no config.json" + (" (a hub cache folder)" if snaps else ""), fix)
    try:
        cfg = json.loads(config.read_text(encoding="utf-8"))
        arch = ", ".join(cfg.get("architectures") or []) or cfg.get("model_type") or "?"
    except (ValueError, UnicodeDecodeError, AttributeError) as exc:
        return Verdict(Status.FAIL, f"{origin}: config.json is not valid JSON ({exc})", "download config.json again")
    shards = sorted(path.glob("*.safetensors"))
    index = path / "model.safetensors.index.json"
    if index.is_file():
        try:
            wanted = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        except (ValueError, KeyError, TypeError):
            return Verdict(Status.FAIL, f"{origin}: {index.name} is damaged", "download it again")
        absent = [w for w in wanted if not (path / w).is_file()]
        if absent:
            return Verdict(
                Status.FAIL,
                f"{origin}: {index.name} lists {len(absent)} missing shard(s): {', '.join(absent[:3])}",
                "finish the download (huggingface-cli download resumes)",
            )
    if not shards:
        if list(path.glob("*.bin")) or list(path.glob("*.pt")):
            return Verdict(
                Status.WARN,
                f"{origin}: {arch}, only PyTorch .bin weights",
                "load_format=safetensors (the FAST_LOAD script) needs safetensors; convert or download "
                "the safetensors version",
            )
        return Verdict(Status.FAIL, f"{origin}: {arch}, no weights (*.safetensors)", "download the weights")
    for shard in shards:
        problem = safetensors_problem(shard)
        if problem:
            return Verdict(Status.FAIL, f"{origin}: {shard.name} {problem}", "download that file again")
    size = sum(s.stat().st_size for s in shards) / 2**30
    value = f"{origin}: {arch}, {len(shards)} safetensors file(s), {size:.1f} GiB"
    if not any((path / n).is_file() for n in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")):
        return Verdict(Status.WARN, f"{value}; no tokenizer files", "copy tokenizer.json/tokenizer_config.json too")
    return Verdict(Status.PASS, value)


class ModelCheck(Check):
    name, title = "model", "Model directory"

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        return judge_model(ctx.paths.get("MODEL_PATH"), ctx.paths_source)
