"""The host preflight's torch, vLLM, flash-attn and verl rows, judged from what is found, not imported.

``verify --env`` imports each package in a probe (torch initialises CUDA, vLLM scans its
plugins): seconds each, most of the host preflight's 15.5 s on an H100 host. Here the same
checks judge the versions :mod:`stack` found in the packages' metadata, so the verdicts and
their fixes stay the checks' own (:mod:`patchctl.preflight`); only an import failure (an ABI
break) is left to the run itself and to ``verify --env``. ``VLLM_ATTENTION_BACKEND`` needs
vLLM's own list of backends, so that one check still imports vLLM, and only when it is set.
"""

from __future__ import annotations

import importlib.machinery
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from patchctl.preflight.model import Context, Status
from patchctl.preflight.probe import ProbeResult, ProbeState
from patchctl.validate.host import form

#: checks whose probe imports the package; judged here from found facts instead
FOUND = ("torch", "vllm", "flash_attn", "verl")


def _devices(env: dict[str, str]) -> list[dict[str, Any]]:
    """The GPUs behind ``CUDA_VISIBLE_DEVICES`` (indices or UUIDs), with name, memory and compute
    capability as nvidia-smi reports them: what torch's ``get_device_properties`` would say,
    without initialising CUDA."""
    query = "--query-gpu=index,uuid,name,memory.total,compute_cap"
    try:
        done = subprocess.run(
            ["nvidia-smi", query, "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    rows = [[c.strip() for c in line.split(",")] for line in done.stdout.splitlines()] if done.returncode == 0 else []
    out = []
    for r in form.visible([r for r in rows if len(r) == 5], env.get("CUDA_VISIBLE_DEVICES")):
        if len(r) == 5:  # not one of visible()'s placeholders for a device nvidia-smi does not list
            try:
                memory = round(float(r[3]) / 1024, 1)
            except ValueError:
                memory = 0.0
            out.append({"name": r[2], "memory_gib": memory, "capability": r[4]})
    return out


def _torch(facts: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"driver": {"kernel_module": facts.get("driver"), "cuda_api": facts.get("cuda_api")}}
    if not facts.get("torch"):
        return {**out, "installed": False}
    gpus = _devices(env) if facts.get("driver") or facts.get("cuda_api") else []
    if _major(facts.get("cuda_api")) < _major(facts.get("torch_cuda")):  # CUDA's minor-version compatibility
        gpus = []  # stops at the major version: this torch would find no usable GPU
    return {
        **out,
        "installed": True,
        "version": facts["torch"],
        "cuda_build": facts.get("torch_cuda"),
        "cuda_available": bool(gpus),
        "device_count": len(gpus),
        "devices": gpus,
    }


def _major(version: str | None) -> int:
    head = (version or "0").split(".")[0]
    return int(head) if head.isdigit() else 0


def _verl(root: Path, facts: dict[str, Any]) -> dict[str, Any]:
    here = os.path.realpath(root)
    out: dict[str, Any] = {"cwd": str(root), "installed": facts.get("verl_location") is not None}
    elsewhere = [p for p in sys.path if p and os.path.realpath(p) != here]
    spec = importlib.machinery.PathFinder.find_spec("verl", elsewhere)
    out["elsewhere"] = os.path.realpath(os.path.dirname(spec.origin)) if spec and spec.origin else None
    if out["installed"]:
        out["location"] = facts["verl_location"]
        try:
            out["version"] = (Path(facts["verl_location"]) / "version" / "version").read_text(encoding="utf-8").strip()
        except OSError:
            out["version"] = "?"
    return out


def probe_data(root: Path, facts: dict[str, Any], env: dict[str, str]) -> dict[str, dict[str, Any]]:
    """What each import probe would have printed, from the facts."""

    def package(key: str) -> dict[str, Any]:
        return {"installed": True, "version": facts[key]} if facts.get(key) else {"installed": False}

    return {
        "torch": _torch(facts, env),
        "vllm": {**package("vllm"), "backends": None},
        "flash_attn": package("flash_attn"),
        "verl": _verl(root, facts),
    }


def rows(ctx: Context, root: Path, facts: dict[str, Any], wanted: list[str]) -> dict[str, dict[str, str]]:
    """Check name -> its table row, for the names of :data:`FOUND` in ``wanted``."""
    from patchctl.preflight.registry import CHECKS

    data = probe_data(root, facts, dict(ctx.env))
    out = {}
    for name in (n for n in FOUND if n in wanted):
        check = CHECKS[name]
        verdict = check.judge(
            ctx, {p.name: ProbeResult(p.name, ProbeState.DONE, data[p.name], 0.0) for p in check.probes}
        )
        note = " (found, not imported)" if verdict.status is not Status.SKIP else ""
        out[name] = {
            "check": name,
            "status": verdict.status.value,
            "value": verdict.value + note,
            "fix": verdict.fix or "",
        }
    return out
