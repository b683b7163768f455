"""The software stack on this host, found without importing it (issue 22, requirements 3 and 6).

Importing torch, vLLM or flash-attn to read a version costs seconds per package (CUDA
initialisation, vLLM's plugin scan); ``importlib.metadata`` reads the same version from the
package's ``dist-info`` in milliseconds, and torch's CUDA build is a literal in
``torch/version.py``. Nothing here imports a package it describes: the preflight stays cheap
and a package whose import hangs cannot hang it. The price is that an ABI break (a flash-attn
built for another torch) shows only when the run imports it; ``patchctl verify --env`` still
imports each package for that.
"""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import json
import os
import platform
import re
from pathlib import Path
from typing import Any

#: the stack table's columns: key -> the distributions that provide it, first found wins
PACKAGES = {
    "torch": ("torch",),
    "vllm": ("vllm",),
    "ray": ("ray",),
    "flash_attn": ("flash-attn", "flash_attn"),
    # PyPI's torch wheels load NCCL from this wheel (cu12 / cu13 builds)
    "nccl": ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11"),
}
_TORCH_CUDA = re.compile(r"""^cuda\s*(?::[^=]*)?=\s*['"]([^'"]+)['"]""", re.M)
_NCCL_SO = re.compile(r"libnccl\.so\.(\d+)(?:\.(\d+)\.(\d+))?$")


def version(dists: tuple[str, ...]) -> str | None:
    for name in dists:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def _package_dir(name: str) -> Path | None:
    """Where a top-level package lives; ``find_spec`` of a top-level name imports nothing."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin or spec.origin in ("built-in", "frozen"):
        return None
    return Path(spec.origin).parent


def torch_cuda(torch_dir: Path | None) -> str | None:
    """The CUDA version torch was built for (None: a CPU-only build, or no torch)."""
    if torch_dir is None:
        return None
    try:
        found = _TORCH_CUDA.search((torch_dir / "version.py").read_text(encoding="utf-8"))
    except OSError:
        return None
    return found.group(1) if found and found.group(1) != "None" else None


def nccl_from_library(torch_dir: Path | None) -> str | None:
    """NCCL's version from the shared library's file name where no wheel declares it (a torch
    built with its own NCCL, a system install): ``libnccl.so.2.21.5`` or at least ``2``."""
    where = [torch_dir / "lib"] if torch_dir else []
    nvidia = importlib.util.find_spec("nvidia")  # a namespace package: no origin, only locations
    where += [Path(p) / "nccl" / "lib" for p in ((nvidia.submodule_search_locations or []) if nvidia else [])]
    where += [Path("/usr/lib/x86_64-linux-gnu"), Path("/usr/local/cuda/lib64")]
    best: str | None = None
    for d in where:
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            m = _NCCL_SO.match(n)
            if m:
                full = ".".join(g for g in m.groups() if g)
                best = full if best is None or len(full) > len(best) else best
    return best


def driver() -> dict[str, str]:
    """The NVIDIA kernel module's version and the CUDA API the driver offers (ctypes: no torch),
    read by ``verify --env``'s torch probe; a first line without a version gives no ``driver``."""
    from patchctl.preflight.probes import torch_info

    found = torch_info.driver()
    out: dict[str, str] = {}
    if re.fullmatch(r"\d+\.\d+(?:\.\d+)?", found.get("kernel_module", "")):
        out["driver"] = found["kernel_module"]
    if "cuda_api" in found:
        out["cuda_api"] = found["cuda_api"]
    return out


def tree_commit(root: Path) -> str | None:
    """The commit migrate verified the tree at (migrate sends no ``.git``), else the tree's HEAD."""
    try:
        prov = json.loads((root / ".patchctl" / "provenance.json").read_text(encoding="utf-8"))
        if prov.get("commit"):
            return str(prov["commit"])[:12]
    except (OSError, ValueError, AttributeError):
        pass
    head = root / ".git" / "HEAD"
    try:
        ref = head.read_text(encoding="utf-8").strip()
        if ref.startswith("ref: "):
            return (root / ".git" / ref[5:]).read_text(encoding="utf-8").strip()[:12]
        return ref[:12]
    except OSError:
        return None


def facts(root: Path, gpu_names: list[str]) -> dict[str, Any]:
    """This host's row of the stack table (values None where a part is absent)."""
    torch_dir = _package_dir("torch")
    out: dict[str, Any] = {"python": platform.python_version()}
    out.update({key: version(dists) for key, dists in PACKAGES.items()})
    out["torch_cuda"] = torch_cuda(torch_dir)
    if out["nccl"] is None:
        out["nccl"] = nccl_from_library(torch_dir)
    out.update(driver())
    out.setdefault("driver", None)
    out["gpu"] = ", ".join(sorted(set(gpu_names))) or None
    out["gpu_count"] = len(gpu_names)
    out["verl_commit"] = tree_commit(root)
    verl = _package_dir("verl")
    out["verl_location"] = str(verl.resolve()) if verl else None
    return out
