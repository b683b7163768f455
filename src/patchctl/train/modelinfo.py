"""vLLM's model-info cache, written beside the launch so that the vLLM server finds it.

On its first start on a machine, vLLM (0.24) learns what the model class supports (multimodal,
pooling, pipeline parallel, ...) in a subprocess that imports vLLM and torch again
(``registry._run_in_subprocess``), and caches the answer in ``$VLLM_CACHE_ROOT/modelinfos``, keyed
by the hash of the model's module. In verl's start-up chain that subprocess runs inside the vLLM
server's start, after the TaskRunner and the FSDP worker: 13.7 s of a cold H100 run's first step
(docs/validation/vllm-smoke/README.md). Started by ``train`` as soon as the model exists, this
process does the same inspection a minute earlier and in parallel, so the server only reads the
file. Every later run on that machine finds the cache anyway: the first run after a migration
is the one that pays.

Best effort by design: where vLLM is missing, the model's architecture unknown to it or its
private registry API changed, this writes nothing and vLLM inspects the model itself, as it
would without patchctl. It runs in the trainer's interpreter (``--python``), like the assets.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from patchctl import proc
from patchctl.errors import PatchctlError

#: what the trainer's interpreter runs: ``patchctl`` as a bare package rooted at argv[1], then main()
BOOT = (
    "import sys, types\n"
    "pkg = types.ModuleType('patchctl'); pkg.__path__ = [sys.argv[1]]; sys.modules['patchctl'] = pkg\n"
    "from patchctl.train.modelinfo import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)
#: the file in the run directory that says what the warm-up did (or why it did nothing)
LOG_NAME = "vllm-modelinfo.log"


class Warming:
    """The warm-up process, started at once; :meth:`stop` ends it if the run ended first.

    It is an ordinary child (no session of its own): it starts nothing, and dies with patchctl.
    """

    def __init__(self, python: str, model: Path, env: Mapping[str, str], log: Path) -> None:
        package = Path(__file__).resolve().parents[1]
        self.log = log
        self._child: subprocess.Popen[bytes] | None = None
        from patchctl import fsutil  # here: the trainer side (main) imports this module bare

        try:
            with fsutil.open_into(log.parent, log.name, stream=True) as sink:
                self._child = proc.spawn(
                    [python, "-c", BOOT, str(package), str(model)],
                    env=dict(env),
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    why="it writes vLLM's model-info cache",
                )
        except (PatchctlError, OSError) as exc:
            # the trainer's own start names a missing interpreter; this is only a speed-up
            with contextlib.suppress(PatchctlError):
                fsutil.write_into(log.parent, log.name, f"not started: {exc}\n".encode())

    def stop(self) -> None:
        if self._child is not None and self._child.poll() is None:
            self._child.kill()
            self._child.wait(timeout=10)


def main(argv: list[str]) -> int:
    """Trainer side: ``MODEL_DIR``. Prints one line per architecture; always exits 0."""
    started = time.monotonic()
    try:
        archs = json.loads((Path(argv[0]) / "config.json").read_text(encoding="utf-8")).get("architectures") or []
    except (OSError, ValueError, AttributeError) as exc:
        print(f"nothing written: cannot read the architectures of {argv[0]}/config.json ({exc})")
        return 0
    try:
        from vllm.model_executor.models import registry
    except Exception as exc:  # any import failure means "no vLLM to warm"
        print(f"nothing written: vllm does not import here ({type(exc).__name__}: {exc})")
        return 0
    for arch in archs:
        print(f"{arch}: {_write(registry, str(arch))} ({time.monotonic() - started:.1f} s)", flush=True)
    return 0


def _write(registry: Any, arch: str) -> str:
    """Inspect ``arch``'s model class here and save what vLLM would have saved after its subprocess."""
    entry = registry.ModelRegistry.models.get(arch)
    if entry is None or type(entry).__name__ != "_LazyRegisteredModel":
        return "nothing written: not a lazily registered vLLM model"
    try:
        from vllm.utils.hashing import safe_hash

        spec = importlib.util.find_spec(entry.module_name)
        if spec is None or not spec.origin:
            return f"nothing written: module {entry.module_name} not found"
        digest = safe_hash(Path(spec.origin).read_bytes(), usedforsecurity=False).hexdigest()
        if entry._load_modelinfo_from_cache(digest) is not None:
            return "cache already current"
        info = registry._ModelInfo.from_model_cls(entry.load_model_cls())
        entry._save_modelinfo_to_cache(info, digest)
        path = entry._get_cache_dir() / entry._get_cache_filename()
    except Exception as exc:  # vLLM's private API may change: then vLLM inspects the model itself
        return f"nothing written: {type(exc).__name__}: {exc}"
    return f"written to {path}" if os.path.isfile(path) else "nothing written: vLLM's cache writer failed"


if __name__ == "__main__":  # pragma: no cover - run through BOOT
    sys.exit(main(sys.argv[1:]))
