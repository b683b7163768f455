"""Probe: torch's version, its CUDA build, the GPUs it sees, and the NVIDIA driver."""

import ctypes
import json
import re
import sys

# typing is imported for mypy alone (which takes any TYPE_CHECKING as true): the probe never pays for it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def kernel_module(first_line: str) -> str:
    """The driver version in /proc/driver/nvidia/version's first line, e.g.
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Tue Oct 10 ..." or
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build ..."."""
    found = re.search(r"\s(\d+\.\d+(?:\.\d+)?)\s", first_line + " ")
    return found.group(1) if found else first_line.strip()


def driver() -> "dict[str, str]":
    out: dict[str, str] = {}
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as f:
            first = f.readline()
        out["kernel_module"] = kernel_module(first)
    except OSError:
        pass
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        v = ctypes.c_int()
        if lib.cuDriverGetVersion(ctypes.byref(v)) == 0:
            out["cuda_api"] = f"{v.value // 1000}.{v.value % 1000 // 10}"
    except OSError:
        out["libcuda"] = "libcuda.so.1 not loadable"
    return out


def main() -> "dict[str, Any]":
    out: dict[str, Any] = {"driver": driver()}
    try:
        import torch
    except ImportError as exc:
        out.update(installed=False, error=f"{type(exc).__name__}: {exc}", missing=getattr(exc, "name", None))
        return out
    out.update(installed=True, version=torch.__version__, cuda_build=torch.version.cuda)
    out["cuda_available"] = bool(torch.cuda.is_available())
    out["device_count"] = torch.cuda.device_count() if out["cuda_available"] else 0
    devices = []
    for i in range(out["device_count"]):
        p = torch.cuda.get_device_properties(i)
        devices.append(
            {"name": p.name, "memory_gib": round(p.total_memory / 2**30, 1), "capability": f"{p.major}.{p.minor}"}
        )
    out["devices"] = devices
    return out


if __name__ == "__main__":
    print("@@patchctl-probe@@ " + json.dumps(main()), flush=True)
    sys.exit(0)
