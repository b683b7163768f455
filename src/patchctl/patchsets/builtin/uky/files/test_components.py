#!/usr/bin/env python3
# Uky: 10-second component check for the Uky verl fork.
"""Check, one after the other, the pieces a GRPO run needs, without starting training.

Checks: PyTorch + CUDA, the data files, vLLM import, verl import (and that it is the
verl of this tree), and a Ray start/stop. Each prints PASS or FAIL with its time;
the exit status is 1 when any check fails.

Run it first on a new cluster or after changing code:

    python3 test_components.py           # human-readable
    python3 test_components.py --json    # one JSON document with every result

The data directory comes from the DATA_DIR environment variable when set, otherwise
from DATA_DIR in git_ignore.py next to this file.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.abspath(__file__))
DATA_FILES = ("train.parquet", "test.parquet", "train_tiny.parquet")


class CheckFailed(Exception):
    """A check failed for a reason that is explained by the message alone."""


def _import(name: str):
    """Import a module; a missing package becomes a one-line failure."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing = getattr(exc, "name", None)
        if missing and (missing == name or name.startswith(missing + ".")):
            raise CheckFailed(f"{name} is not installed in {sys.executable}") from None
        raise CheckFailed(f"importing {name} failed: {type(exc).__name__}: {exc}") from None


def _git_ignore_settings() -> dict:
    path = os.path.join(ROOT, "git_ignore.py")
    if not os.path.isfile(path):
        return {}
    namespace: dict = {"__name__": "git_ignore", "__file__": path}
    with open(path, encoding="utf-8") as handle:
        exec(compile(handle.read(), path, "exec"), namespace)
    return {k: v for k, v in namespace.items() if k.isupper() and isinstance(v, str)}


# ---------------------------------------------------------------------------
# The checks. Each returns a one-line detail string or raises.
# ---------------------------------------------------------------------------


def check_torch_cuda() -> str:
    torch = _import("torch")
    if not torch.cuda.is_available():
        raise CheckFailed(f"torch {torch.__version__} is installed but CUDA is not available")
    count = torch.cuda.device_count()
    names = sorted({torch.cuda.get_device_name(i) for i in range(count)})
    return f"torch {torch.__version__}, CUDA {torch.version.cuda}, {count} GPU(s): {', '.join(names)}"


def check_data_files() -> str:
    data_dir = os.environ.get("DATA_DIR")
    source = "environment"
    if not data_dir:
        data_dir = _git_ignore_settings().get("DATA_DIR")
        source = "git_ignore.py"
    if not data_dir:
        raise CheckFailed("DATA_DIR is not set and git_ignore.py is missing (cp git_ignore.py.example git_ignore.py)")
    missing = [name for name in DATA_FILES if not os.path.isfile(os.path.join(data_dir, name))]
    if missing:
        hint = " (python3 create_tiny_dataset.py makes train_tiny.parquet)" if "train_tiny.parquet" in missing else ""
        raise CheckFailed(f"missing in {data_dir} (from {source}): {', '.join(missing)}{hint}")
    sizes = ", ".join(
        f"{name} {os.path.getsize(os.path.join(data_dir, name)) / 1e6:.1f} MB" for name in DATA_FILES
    )
    return f"{data_dir}: {sizes}"


def check_vllm() -> str:
    vllm = _import("vllm")
    return f"vllm {getattr(vllm, '__version__', '?')}"


def check_verl() -> str:
    # Import this tree's verl even when run from another directory.
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    verl = _import("verl")
    location = os.path.dirname(os.path.abspath(verl.__file__))
    expected = os.path.join(ROOT, "verl")
    version = getattr(verl, "__version__", "?")
    if os.path.realpath(location) != os.path.realpath(expected):
        raise CheckFailed(f"verl {version} imported from {location}, not from this tree ({expected})")
    return f"verl {version} from {location}"


def check_ray() -> str:
    ray = _import("ray")
    started = False
    try:
        # A small local instance; when RAY_ADDRESS points at a running cluster,
        # connect to it instead (Ray refuses num_cpus in that case).
        kwargs = {} if os.environ.get("RAY_ADDRESS") else {"num_cpus": 2, "include_dashboard": False}
        ray.init(ignore_reinit_error=True, log_to_driver=False, **kwargs)
        started = True
        cpus = ray.cluster_resources().get("CPU", 0)
    except Exception as exc:  # noqa: BLE001 - any Ray failure is a check failure
        raise CheckFailed(f"ray.init failed: {type(exc).__name__}: {exc}") from None
    finally:
        if started:
            ray.shutdown()
    return f"ray {ray.__version__}: started with {cpus:g} CPU(s) and shut down"


CHECKS = (
    ("torch_cuda", "PyTorch + CUDA", check_torch_cuda),
    ("data_files", "Data files", check_data_files),
    ("vllm", "vLLM import", check_vllm),
    ("verl", "verl import", check_verl),
    ("ray", "Ray init/shutdown", check_ray),
)


def run_checks(verbose: bool) -> list[dict]:
    results = []
    for key, title, func in CHECKS:
        start = time.monotonic()
        error_trace = None
        try:
            detail = func()
            ok = True
        except CheckFailed as exc:
            ok, detail = False, str(exc)
        except Exception as exc:  # noqa: BLE001 - report, then keep going
            ok, detail = False, f"{type(exc).__name__}: {exc}"
            error_trace = traceback.format_exc()
        seconds = time.monotonic() - start
        result = {"name": key, "title": title, "ok": ok, "seconds": round(seconds, 3), "detail": detail}
        results.append(result)
        if verbose:
            status = "PASS" if ok else "FAIL"
            print(f"[{status}] {title:<18} ({seconds:5.2f}s)  {detail}", flush=True)
            if error_trace and os.environ.get("UKY_TRACEBACK"):
                print(error_trace, file=sys.stderr)
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Quick component check for the Uky verl fork.")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON document")
    args = parser.parse_args(argv)

    start = time.monotonic()
    results = run_checks(verbose=not args.json)
    total = time.monotonic() - start
    failed = [r for r in results if not r["ok"]]

    if args.json:
        print(json.dumps({"ok": not failed, "seconds": round(total, 3), "checks": results}, indent=2))
    else:
        print("-" * 60)
        if failed:
            print(f"{len(failed)} of {len(results)} checks FAILED in {total:.1f}s: " + ", ".join(r["title"] for r in failed))
        else:
            print(f"All {len(results)} checks passed in {total:.1f}s - next: the DEBUG training script.")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
