"""Write vLLM's model-info cache for Qwen2 while the trainer starts (speed trial, "warm" variant).

On its first start on a machine, vLLM (0.24) learns what the model class supports in a
subprocess (``registry._run_in_subprocess``) that imports vLLM and torch again, and caches the
answer in ``$VLLM_CACHE_ROOT/modelinfos``, keyed by the model file's hash. Started beside
``patchctl train``, this process writes that cache long before verl's vLLM server asks, so the
server finds it. Every later run on a machine finds it anyway: this is what the first run pays.
"""
from __future__ import annotations

import time

t = time.monotonic()
from vllm.model_executor.models.registry import _LazyRegisteredModel, _ModelInfo

lazy = _LazyRegisteredModel(module_name="vllm.model_executor.models.qwen2", class_name="Qwen2ForCausalLM")
path = lazy._get_cache_dir() / lazy._get_cache_filename()
from vllm.utils.hashing import safe_hash

model_file = __import__("vllm.model_executor.models.qwen2", fromlist=["x"]).__file__
with open(model_file, "rb") as f:
    digest = safe_hash(f.read(), usedforsecurity=False).hexdigest()
lazy._save_modelinfo_to_cache(_ModelInfo.from_model_cls(lazy.load_model_cls()), digest)
print(f"model-info cache written in {time.monotonic() - t:.1f} s: {path} ({path.exists()})")
