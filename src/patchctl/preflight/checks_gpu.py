"""Checks of the GPU stack: torch and its CUDA view, flash-attn."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packaging.version import InvalidVersion, Version

from patchctl.preflight.base import Check, not_installed
from patchctl.preflight.model import Context, Status, Verdict
from patchctl.preflight.probe import Probe, ProbeResult

TORCH = Probe("torch", "torch_info.py")
FLASH_ATTN = Probe("flash_attn", "flash_attn_info.py")


def _driver(d: Mapping[str, Any]) -> str:
    parts = []
    if d.get("kernel_module"):
        parts.append(f"driver {d['kernel_module']}")
    if d.get("cuda_api"):
        parts.append(f"CUDA {d['cuda_api']} driver API")
    return ", ".join(parts) or "no NVIDIA driver"


def _older(a: str | None, b: str | None) -> bool:
    try:
        return a is not None and b is not None and Version(a) < Version(b)
    except InvalidVersion:
        return False


class TorchCheck(Check):
    name, title, probes = "torch", "PyTorch + CUDA", (TORCH,)

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        t = data["torch"].data
        driver = t.get("driver", {})
        if not t.get("installed"):
            if t.get("missing") not in (None, "torch"):
                return Verdict(
                    Status.FAIL,
                    f"torch does not import: {t.get('error')}",
                    f"install the missing package {t['missing']!r} into {ctx.python}",
                )
            return not_installed(
                "torch",
                ctx,
                "neither verl's trainer nor any rollout can run",
                "pip install torch (the build matching the CUDA driver)",
            )
        head = f"torch {t['version']}"
        if not t.get("cuda_build"):
            return Verdict(
                Status.FAIL,
                f"{head} is a CPU-only build ({_driver(driver)})",
                "training needs a CUDA build: pip install torch --index-url "
                "https://download.pytorch.org/whl/cu128 (pick the CUDA version the driver supports)",
            )
        head += f", built for CUDA {t['cuda_build']}"
        if not t.get("cuda_available"):
            if ctx.env.get("CUDA_VISIBLE_DEVICES", None) == "":
                why, fix = "CUDA_VISIBLE_DEVICES is empty", "unset CUDA_VISIBLE_DEVICES or list GPUs in it"
            elif not driver.get("kernel_module") and not driver.get("cuda_api"):
                why, fix = (
                    "no NVIDIA driver is visible",
                    ("run on a GPU node; in a container, start it with --gpus all (NVIDIA container toolkit)"),
                )
            elif _older(driver.get("cuda_api"), t["cuda_build"]):
                why = f"the driver supports CUDA up to {driver['cuda_api']}, older than torch's {t['cuda_build']}"
                fix = f"install a torch build for CUDA <= {driver['cuda_api']} or update the NVIDIA driver"
            else:
                why, fix = "torch.cuda.is_available() is False", "run nvidia-smi; check the driver and device nodes"
            return Verdict(Status.FAIL, f"{head}; no GPU usable: {why} ({_driver(driver)})", fix)
        gpus = t.get("devices", [])
        names: dict[str, int] = {}
        for g in gpus:
            key = f"{g['name']} ({g['memory_gib']} GiB, sm {g['capability']})"
            names[key] = names.get(key, 0) + 1
        listed = ", ".join(f"{n} x {k}" if n > 1 else k for k, n in names.items())
        return Verdict(
            Status.PASS, f"{head}; {len(gpus)} GPU{'s' if len(gpus) != 1 else ''}: {listed}; {_driver(driver)}"
        )


class FlashAttnCheck(Check):
    name, title, probes = "flash_attn", "flash-attn", (FLASH_ATTN,)

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        f = data["flash_attn"].data
        if not f.get("installed"):
            return Verdict(
                Status.WARN,
                "flash-attn is not installed: verl's FSDP workers load models with "
                "attn_implementation=flash_attention_2 by default and fail ('FlashAttention2 has been "
                "toggled on'); use_remove_padding=True cannot be used",
                "pip install flash-attn --no-build-isolation; or run with sdpa attention: "
                "+actor_rollout_ref.model.override_config.attn_implementation=sdpa "
                "actor_rollout_ref.model.use_remove_padding=False",
            )
        error = f.get("error")
        if error is None:
            return Verdict(Status.PASS, f"flash-attn {f.get('version', '?')}")
        if "undefined symbol" in error:
            return Verdict(
                Status.FAIL,
                f"flash-attn does not load: {error}",
                "flash-attn was built against another torch; reinstall it for the installed torch: "
                "pip install --force-reinstall --no-build-isolation --no-cache-dir flash-attn",
            )
        if f.get("missing") and f["missing"] != "flash_attn":
            return Verdict(
                Status.FAIL, f"flash-attn does not import: {error}", f"install the missing package {f['missing']!r}"
            )
        return Verdict(
            Status.FAIL,
            f"flash-attn does not import: {error}",
            "reinstall it: pip install --force-reinstall --no-build-isolation flash-attn",
        )
