#!/usr/bin/env python3
"""Which distributions does the verl 0.9.1 + vLLM 0.24.0 run import?  (CPU-side import trace)

Run with an interpreter that has vLLM, verl's dependencies and the GPU image's packages
installed (Python 3.12, the same wheels the bundle holds), with the patched verl tree first on
PYTHONPATH. It imports the modules each process of the run imports (verl's driver and
TaskRunner, the FSDP engine worker, the vLLM HTTP server actor, vLLM's engine core and GPU
worker, the Qwen2 model, the FlashAttention backend, the OpenAI server, the safetensors loader)
and prints, as JSON, every distribution that owns an imported module, plus the imports that
failed. No GPU is needed: only imports run.

usage: [TRACE_MODEL=MODEL_DIR] python3 trace_imports.py OUT.json
With TRACE_MODEL it also builds vLLM's OpenAI server app for that model, as verl does, which runs
imports vLLM makes only inside functions.
On a machine without the NVIDIA driver, put an empty ``libcuda.so.1`` (``gcc -shared -fPIC
-Wl,-soname,libcuda.so.1``) on LD_LIBRARY_PATH and set TRACE_LAZY=1: extensions then load with
RTLD_LAZY, so their CUDA driver calls stay unresolved (they are never called) and the imports
behind them are traced too.
"""
from __future__ import annotations

import importlib
import importlib.metadata as md
import json
import os
import sys
import traceback

MODULES = [
    # verl: driver, TaskRunner (v1 trainer, transfer queue), workers, rollout, data, reward
    "verl.trainer.main_ppo", "verl.trainer.main_ppo_v0", "verl.trainer.ppo.ray_trainer", "verl.trainer.ppo.v1",
    "transfer_queue", "verl.workers.engine_workers", "verl.workers.engine.fsdp.transformer_impl",
    "verl.workers.rollout.vllm_rollout", "verl.workers.rollout.vllm_rollout.vllm_async_server",
    "verl.workers.rollout.vllm_rollout.utils", "verl.workers.rollout.vllm_rollout.vllm_rollout",
    "verl.workers.rollout.vllm_rollout.bucketed_weight_transfer", "verl.experimental.agent_loop",
    "verl.experimental.agent_loop.single_turn_agent_loop", "verl.utils.dataset.rl_dataset",
    "verl.utils.reward_score", "verl.utils.reward_score.geo3k", "verl.workers.reward_manager",
    "verl.trainer.ppo.reward", "verl.utils.tracking", "verl.single_controller.ray", "verl.checkpoint_engine",
    "verl.models.transformers.monkey_patch", "verl.utils.attention_utils",
    # vLLM: server, engine, executor, worker, model, attention, compile, loader, sampler
    "vllm", "vllm.entrypoints.cli.serve", "vllm.entrypoints.openai.api_server",
    "vllm.entrypoints.openai.parser.harmony_utils", "vllm.v1.engine.async_llm", "vllm.v1.engine.core",
    "vllm.v1.engine.core_client", "vllm.v1.executor.multiproc_executor", "vllm.v1.executor.abstract",
    "vllm.v1.worker.gpu_worker", "vllm.v1.worker.gpu_model_runner", "vllm.model_executor.models.qwen2",
    "vllm.v1.attention.backends.flash_attn", "vllm.vllm_flash_attn", "vllm.compilation.backends",
    "vllm.compilation.decorators", "vllm.compilation.cuda_graph", "vllm.model_executor.model_loader",
    "vllm.model_executor.model_loader.default_loader", "vllm.model_executor.model_loader.weight_utils",
    "vllm.v1.sample.sampler", "vllm.v1.sample.ops.topk_topp_sampler", "vllm.v1.structured_output",
    "vllm.v1.core.sched.scheduler", "vllm.v1.kv_cache_interface", "vllm.tokenizers", "vllm.renderers",
    "vllm.multimodal", "vllm.platforms.cuda", "vllm.distributed.parallel_state", "vllm.v1.metrics.loggers",
    "vllm.entrypoints.openai.chat_completion.serving", "vllm.entrypoints.openai.completion.serving",
    "vllm.model_executor.layers.rotary_embedding", "vllm.model_executor.layers.layernorm",
    "vllm.model_executor.layers.activation", "vllm.model_executor.layers.logits_processor",
    "vllm.device_allocator.cumem", "vllm.utils.torch_utils",
]


#: imported inside functions that the run calls (found on the GPU: build_app imports
#: prometheus_fastapi_instrumentator only when it runs)
LATE = ["vllm.parser.metrics", "vllm.entrypoints.generate.api_router", "vllm.entrypoints.serve",
        "vllm.entrypoints.serve.instrumentator.metrics", "vllm.entrypoints.openai.engine.serving",
        "vllm.entrypoints.openai.models.serving", "uvicorn.protocols.http.h11_impl",
        "uvicorn.protocols.http.httptools_impl", "uvicorn.loops.uvloop", "uvicorn.lifespan.on"]


def build_server_app(model: str) -> None:
    """What verl's vLLMHttpServer.run_server does before the engine is needed: parse the serve
    command line and build the FastAPI app (this runs vLLM's lazy imports of the server)."""
    import vllm.entrypoints.cli.serve as serve
    from vllm.entrypoints.openai.api_server import build_app
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser()
    sub = parser.add_subparsers(required=False, dest="subparser")
    for cmd in serve.cmd_init():
        cmd.subparser_init(sub).set_defaults(dispatch_function=cmd.cmd)
    args = parser.parse_args(["serve", model])
    args.model = args.model_tag
    build_app(args, supported_tasks=("generate",))


def main() -> None:
    if os.environ.get("TRACE_LAZY"):
        sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL)
    failed = {}
    for name in MODULES:
        try:
            importlib.import_module(name)
        except BaseException as exc:  # noqa: BLE001 - a trace records every failure
            failed[name] = f"{type(exc).__name__}: {exc}"
            if os.environ.get("TRACE_VERBOSE"):
                traceback.print_exc()
    for name in LATE:
        try:
            importlib.import_module(name)
        except BaseException as exc:  # noqa: BLE001
            failed[name] = f"{type(exc).__name__}: {exc}"
    if os.environ.get("TRACE_MODEL"):  # a model directory (make_assets.py's) to build the server app for
        try:
            build_server_app(os.environ["TRACE_MODEL"])
        except BaseException as exc:  # noqa: BLE001
            failed["build_app"] = f"{type(exc).__name__}: {exc}"
            if os.environ.get("TRACE_VERBOSE"):
                traceback.print_exc()
    # owner of each imported module, by its file in the distributions' RECORDs (namespace
    # packages such as google.* or opentelemetry.* are split between several distributions)
    by_file: dict[str, str] = {}
    for dist in md.distributions():
        for f in dist.files or ():
            by_file[os.path.realpath(dist.locate_file(f))] = dist.metadata["Name"]
    dists: dict[str, set[str]] = {}
    unowned = set()
    for name, mod in list(sys.modules.items()):
        path = getattr(mod, "__file__", None)
        if not path:
            continue
        owner = by_file.get(os.path.realpath(path))
        if owner:
            dists.setdefault(owner, set()).add(name.split(".")[0])
        elif "site-packages" in path:
            unowned.add(name)
    versions = {d: md.version(d) for d in dists}
    doc = {"python": sys.version.split()[0], "failed": failed,
           "distributions": {d: {"version": versions[d], "modules": sorted(dists[d])}
                             for d in sorted(dists, key=str.lower)},
           "unowned_site_modules": sorted(unowned)}
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
