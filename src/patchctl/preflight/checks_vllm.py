"""Checks of vLLM: that it imports, its version against the target's declared range, and the
attention backend variable against what that vLLM implements (the record's TORCH_SDPA failure)."""

from __future__ import annotations

from collections.abc import Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from patchctl.preflight.base import Check, requirement
from patchctl.preflight.model import Context, Status, Verdict
from patchctl.preflight.probe import Probe, ProbeResult

VLLM = Probe("vllm", "vllm_info.py")
#: the value the uky training scripts export, known to work with vLLM 0.8-0.12 on CUDA
SAFE_BACKEND = "FLASH_ATTN"


def _has_hf_rollout(ctx: Context) -> bool | None:
    """Whether the target can roll out with HF generate(): verl <= 0.5 builds HFRollout for
    rollout.name=hf; 0.6 keeps hf_rollout.py but its rollout registry names only vllm and sglang."""
    if ctx.target is None:
        return None
    rollout = ctx.target.root / "verl" / "workers" / "rollout"
    if not (rollout / "hf_rollout.py").is_file():
        return False
    try:
        base = (rollout / "base.py").read_text(encoding="utf-8")
    except OSError:
        return True
    return "_ROLLOUT_REGISTRY" not in base or '("hf"' in base


def _whose(ctx: Context) -> str:
    if ctx.target is None:
        return "the target"
    return f"verl {ctx.target.version or '?'} ({ctx.requirements_source or 'setup.py'})"


class VllmCheck(Check):
    name, title, probes = "vllm", "vLLM", (VLLM,)

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        v = data["vllm"].data
        install = f"pip install {requirement(ctx, 'vllm')}"
        if not v.get("installed"):
            hf = _has_hf_rollout(ctx)
            if hf is False:
                return Verdict(
                    Status.FAIL,
                    f"vLLM is not installed: the vllm rollout cannot run, and verl "
                    f"{ctx.target.version if ctx.target else ''} has no hf rollout (only vllm/sglang)",
                    install,
                )
            hf_note = (
                "the hf rollout can (actor_rollout_ref.rollout.name=hf)"
                if hf
                else "the hf rollout can, where the verl release still has it (<= 0.5)"
            )
            return Verdict(Status.WARN, f"vLLM is not installed: the vllm rollout cannot run; {hf_note}", install)
        if "error" in v:
            error = v["error"]
            if "undefined symbol" in error:
                fix = "vLLM was built against another torch; reinstall vLLM so pip brings the torch it pins"
            elif v.get("missing") and not str(v["missing"]).startswith("vllm"):
                fix = f"install the missing package {v['missing']!r}"
            else:
                fix = f"reinstall vLLM: {install}"
            return Verdict(Status.FAIL, f"vLLM is installed but does not import: {error}", fix)
        version = v.get("version", "?")
        spec = ctx.requirements.get("vllm")
        if not spec:
            note = "no --target, range not checked" if ctx.target is None else f"{_whose(ctx)} declares no vllm range"
            return Verdict(Status.PASS, f"vLLM {version} ({note})")
        try:
            inside = SpecifierSet(spec).contains(version, prereleases=True)
        except InvalidSpecifier:
            inside = True
        if inside:
            return Verdict(Status.PASS, f"vLLM {version}, inside {_whose(ctx)}'s range {spec}")
        return Verdict(
            Status.WARN,
            f"vLLM {version} is outside {_whose(ctx)}'s declared range {spec}",
            f"{install}, or keep it and rely on patches for the API changes (the uky patch "
            "vllm-enable-log-requests covers disable_log_requests)",
        )


class AttentionBackendCheck(Check):
    name, title, probes = "vllm_attention_backend", "VLLM_ATTENTION_BACKEND", (VLLM,)

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        raw = ctx.env.get("VLLM_ATTENTION_BACKEND")
        if raw is None:
            return Verdict(Status.PASS, "unset: vLLM picks a backend for the GPU")
        v = data["vllm"].data
        if not v.get("installed") or "error" in v:
            return Verdict(Status.SKIP, f"VLLM_ATTENTION_BACKEND={raw}; vLLM does not import, so it is not checked")
        known = v.get("backends")
        version = v.get("version", "?")
        if not known:
            return Verdict(
                Status.WARN,
                f"VLLM_ATTENTION_BACKEND={raw}; cannot list vLLM {version}'s backends",
                f"if vLLM rejects it, export VLLM_ATTENTION_BACKEND={SAFE_BACKEND}",
            )
        name = raw.strip().removesuffix("_VLLM_V1")
        fix = f"export VLLM_ATTENTION_BACKEND={SAFE_BACKEND} (the uky scripts' value) or unset it"
        if name not in known["names"]:
            listed = ", ".join(n for n in known["names"] if n not in known["unregistered"])
            return Verdict(
                Status.FAIL,
                f"VLLM_ATTENTION_BACKEND={raw} is not a backend vLLM {version} knows (it has: {listed})",
                fix,
            )
        if name in known["unregistered"]:
            return Verdict(
                Status.FAIL,
                f"VLLM_ATTENTION_BACKEND={raw}: vLLM {version} names it but implements no "
                f"backend for it, so engines fail with 'Backend {name} must be registered before use'",
                fix,
            )
        return Verdict(Status.PASS, f"VLLM_ATTENTION_BACKEND={raw}, implemented by vLLM {version}")
