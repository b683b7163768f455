#!/usr/bin/env python3
# Uky: standalone form of the Triton "-lcuda" fix (fallback; not used by default).
"""Let Triton find libcuda.so in containers that only ship the CUDA stub library.

Symptom: Triton's first kernel compile dies with ``/usr/bin/ld: cannot find -lcuda``
(a ``subprocess.CalledProcessError`` from gcc). It happens in containers such as
vast.ai where the driver's libcuda.so is not on the linker's search path.

The fix adds ``/usr/local/cuda/lib64/stubs`` to the front of ``LD_LIBRARY_PATH`` and,
when ``libcuda.so`` is there, points ``TRITON_LIBCUDA_PATH`` at that directory. It
has to run before vLLM or Triton are imported in the process that compiles.

In the Uky fork the same fix is applied at the top of
``verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py``, i.e. inside the Ray
worker that imports vLLM: Ray workers do not reliably inherit every variable set
in the launching shell, so the training scripts' ``export LD_LIBRARY_PATH=...``
alone is not enough. This module is kept as a fallback for code paths that do
not go through that file (custom scripts, other rollout modules). Use it as:

    import fix_triton          # first import in the process; applies the fix
    fix_triton.apply()         # or call it explicitly; safe to call again

or print what it would do:

    python3 fix_triton.py
"""

from __future__ import annotations

import os

CUDA_STUBS_DIR = "/usr/local/cuda/lib64/stubs"


def apply(stubs_dir: str = CUDA_STUBS_DIR, environ=None) -> dict:
    """Apply the fix to ``environ`` (default ``os.environ``); return what changed.

    Idempotent: the directory is added to LD_LIBRARY_PATH only when missing, and an
    existing TRITON_LIBCUDA_PATH is left alone.
    """
    env = os.environ if environ is None else environ
    changed = {}
    if not os.path.isdir(stubs_dir):
        return changed

    current = env.get("LD_LIBRARY_PATH", "")
    entries = [entry for entry in current.split(os.pathsep) if entry]
    if stubs_dir not in entries:
        env["LD_LIBRARY_PATH"] = os.pathsep.join([stubs_dir] + entries)
        changed["LD_LIBRARY_PATH"] = env["LD_LIBRARY_PATH"]

    if os.path.exists(os.path.join(stubs_dir, "libcuda.so")) and not env.get("TRITON_LIBCUDA_PATH"):
        # Triton expects the directory that holds libcuda.so, not the file itself.
        env["TRITON_LIBCUDA_PATH"] = stubs_dir
        changed["TRITON_LIBCUDA_PATH"] = stubs_dir
    return changed


# Importing the module applies the fix, like the inline version in vllm_rollout_spmd.py.
APPLIED = apply()


if __name__ == "__main__":
    if not os.path.isdir(CUDA_STUBS_DIR):
        print(f"{CUDA_STUBS_DIR} does not exist here; nothing to do.")
    elif APPLIED:
        for name, value in APPLIED.items():
            print(f"{name}={value}")
        print("(set for this process only; import fix_triton in the process that needs it)")
    else:
        print("Already in place; nothing changed.")
