"""Diagnostic only (the vLLM validation run): record where the uky Triton block executes.

On ``PYTHONPATH`` with ``UKY_EVIDENCE_DIR`` set, every Python process of the run (verl's driver,
Ray workers, vLLM's engine core and GPU worker, which inherit the environment) watches for the
import of ``verl.workers.rollout.vllm_rollout``, the package whose ``__init__.py`` carries the
``# Uky`` block. When that module has executed, the process appends one JSON line to
``UKY_EVIDENCE_DIR/<pid>.jsonl``: its pid and parent, its command line, ``LD_LIBRARY_PATH`` just
before and just after the module ran (other imports in it may change it too: cv2 does), the
block's own module-level name ``cuda_stubs`` (the block defines it; the upstream file does not)
whether it found the stubs directory (it assigns ``current_ld_path`` then) and whether the
directory was missing from ``LD_LIBRARY_PATH`` before and present after (the block prepended it). Two later samples (10 s and 40 s on) add the
process title vLLM sets and whether vLLM's GPU worker or engine core modules are loaded in it.
Nothing is changed in the process: the module is loaded by its own loader.
"""
import os

_DIR = os.environ.get("UKY_EVIDENCE_DIR")
if _DIR:
    import importlib.abc
    import importlib.util
    import json
    import sys
    import threading
    import time

    _TARGET = "verl.workers.rollout.vllm_rollout"

    def _cmdline() -> str:
        try:
            with open(f"/proc/{os.getpid()}/cmdline", "rb") as f:
                return f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:300]
        except OSError:
            return ""

    def _record(event: str, **fields: object) -> None:
        try:
            os.makedirs(_DIR, exist_ok=True)
            with open(os.path.join(_DIR, f"{os.getpid()}.jsonl"), "a", encoding="utf-8") as f:
                f.write(json.dumps({"t": round(time.time(), 3), "pid": os.getpid(), "ppid": os.getppid(),
                                    "event": event, "cmdline": _cmdline(), **fields}) + "\n")
        except Exception:  # noqa: BLE001 - a diagnostic never breaks the run
            pass

    def _modules() -> dict:
        names = ("vllm.v1.worker.gpu_worker", "vllm.v1.worker.gpu_model_runner", "vllm.v1.engine.core",
                 "vllm.v1.executor.multiproc_executor", "verl.workers.rollout.vllm_rollout.vllm_async_server")
        return {n: n in sys.modules for n in names}

    class _Watch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):  # noqa: ANN001
            if name != _TARGET:
                return None
            sys.meta_path.remove(self)
            try:
                spec = importlib.util.find_spec(name)
            finally:
                sys.meta_path.insert(0, self)
            if spec is None or spec.loader is None:
                return spec
            run = spec.loader.exec_module

            def exec_module(module):  # noqa: ANN001
                before = os.environ.get("LD_LIBRARY_PATH", "")
                run(module)
                after = os.environ.get("LD_LIBRARY_PATH", "")
                _record("uky-block-executed", module=getattr(module, "__file__", None),
                        cuda_stubs=getattr(module, "cuda_stubs", None),
                        stubs_dir_exists=os.path.isdir("/usr/local/cuda/lib64/stubs"),
                        # the block assigns current_ld_path when the stubs directory exists, then
                        # prepends the directory only where LD_LIBRARY_PATH lacks it
                        block_saw_stubs_dir=hasattr(module, "current_ld_path"),
                        block_prepended_stubs=bool(getattr(module, "cuda_stubs", None))
                        and module.cuda_stubs not in before.split(":") and module.cuda_stubs in after.split(":"),
                        stubs_on_ld_library_path=bool(getattr(module, "cuda_stubs", None))
                        and module.cuda_stubs in after.split(":"),
                        ld_library_path_before=before, ld_library_path_after=after, modules=_modules())

                def later() -> None:
                    for wait in (10, 30):
                        time.sleep(wait)
                        _record("sample", ld_library_path=os.environ.get("LD_LIBRARY_PATH", ""), modules=_modules())

                threading.Thread(target=later, name="uky-evidence", daemon=True).start()

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _Watch())
