"""Prime CUDA's JIT cache with the kernels of one GRPO step, while the trainer is still importing.

Run by ``patchctl train`` beside the trainer (``python gpu_warmup_script.py MODEL_DIR``), with
the trainer's interpreter and environment. It must not import patchctl: that interpreter may
not have it. Measured on a freshly started H100 (torch 2.11+cu130): the first training step took
~5 s instead of ~1.6 s, and deleting ``~/.nv/ComputeCache`` alone brought the 5 s back, so the
cost is the driver JIT-compiling kernels on their first use. The trainer's GPU worker starts
~30 s after the launch; this script runs a miniature of its first step (FSDP with bf16 mixed
precision, sampling with ``generate``, log-probs and entropy, a clipped policy-gradient loss,
backward, gradient clipping, AdamW) long before that, so the kernels are compiled and cached
when the worker needs them. Every stage is best effort: a failure is logged and the next runs.
"""

from __future__ import annotations

import os
import socket
import sys
import time

T0 = time.monotonic()


def say(msg: str) -> None:
    print(f"[{time.monotonic() - T0:6.2f}s] {msg}", flush=True)


def stage(name, fn):  # type: ignore[no-untyped-def]
    try:
        out = fn()
        say(f"{name}: ok")
        return out
    except Exception as exc:  # best effort: the trainer does not depend on this
        say(f"{name}: {type(exc).__name__}: {exc}")
        return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main(model_dir: str) -> int:
    try:
        import torch
    except ImportError as exc:
        say(f"torch is not importable ({exc}): nothing to warm up")
        return 0

    if not torch.cuda.is_available():
        say("no CUDA device: nothing to warm up")
        return 0
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    say(f"torch {torch.__version__} on {torch.cuda.get_device_name(dev)}")

    def dist():  # type: ignore[no-untyped-def]
        import torch.distributed as td

        os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "RANK": "0",
                           "WORLD_SIZE": "1", "LOCAL_RANK": "0"})
        td.init_process_group("nccl", rank=0, world_size=1, device_id=dev)
        x = torch.ones(1024, device=dev)
        td.all_reduce(x)
        for dtype in (torch.float32, torch.bfloat16):
            t = torch.ones(4096, device=dev, dtype=dtype)
            out = torch.empty(4096, device=dev, dtype=dtype)
            td.all_gather_into_tensor(out, t)
            td.reduce_scatter_tensor(out, t)
        return td

    td = stage("nccl (world size 1)", dist)

    def model():  # type: ignore[no-untyped-def]
        from transformers import AutoModelForCausalLM

        m = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32, attn_implementation="sdpa")
        m.to(dev)
        if td is not None:
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
            from torch.distributed.fsdp import MixedPrecision

            mp = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32, buffer_dtype=torch.float32)
            m = FSDP(m, mixed_precision=mp, device_id=dev, use_orig_params=False)
        return m

    m = stage("model (fp32, FSDP bf16 mixed precision)", model)
    if m is None:
        return 0
    vocab = m.config.vocab_size if hasattr(m, "config") else m.module.config.vocab_size
    prompt = torch.randint(3, vocab, (8, 12), device=dev)
    mask = torch.ones_like(prompt)
    mask[:2, :3] = 0  # left padding, as the rollout sees it

    def rollout():  # type: ignore[no-untyped-def]
        inner = m.module if hasattr(m, "module") else m
        ctx = m.summon_full_params(m, writeback=False, recurse=False) if hasattr(m, "summon_full_params") else None
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            if ctx is not None:
                with ctx:
                    return inner.generate(prompt, attention_mask=mask, do_sample=True, max_new_tokens=8, top_p=1.0,
                                          top_k=0, temperature=1.0, pad_token_id=0, eos_token_id=1)
            return inner.generate(prompt, attention_mask=mask, do_sample=True, max_new_tokens=8, top_p=1.0, top_k=0,
                                  temperature=1.0, pad_token_id=0, eos_token_id=1)

    seqs = stage("generate (sampling, bf16 autocast)", rollout)
    if seqs is None:
        seqs = torch.randint(3, vocab, (8, 20), device=dev)
    attn = torch.ones_like(seqs)
    pos = torch.clamp(attn.cumsum(-1) - 1, min=0)

    def logprobs(train: bool):  # type: ignore[no-untyped-def]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = m(input_ids=seqs, attention_mask=attn, position_ids=pos, use_cache=False).logits
        logits = logits.float()[:, :-1] / 1.0
        logp = torch.log_softmax(logits, -1).gather(-1, seqs[:, 1:].unsqueeze(-1)).squeeze(-1)
        probs = torch.softmax(logits, -1)
        entropy = torch.logsumexp(logits, -1) - (probs * logits).sum(-1)
        return logp, entropy

    old = stage("log-probs (no grad)", lambda: torch.no_grad()(lambda: logprobs(False))())

    def update():  # type: ignore[no-untyped-def]
        opt = torch.optim.AdamW(m.parameters(), lr=1e-6, betas=(0.9, 0.999), weight_decay=0.01)
        logp, entropy = logprobs(True)
        ref = old[0] if old is not None else logp.detach()
        adv = torch.randn(logp.shape[0], 1, device=dev).expand_as(logp)
        ratio = torch.exp(logp - ref)
        loss = torch.maximum(-adv * ratio, -adv * torch.clamp(ratio, 0.8, 1.2))
        mask_r = torch.ones_like(loss)
        loss = (loss * mask_r).sum() / mask_r.sum() - 0.0 * (entropy * mask_r).sum() / mask_r.sum()
        loss.backward()
        norm = m.clip_grad_norm_(1.0) if hasattr(m, "clip_grad_norm_") else torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        if torch.isfinite(norm):
            opt.step()
        opt.zero_grad(set_to_none=True)

    stage("policy update (backward, clip, AdamW)", update)
    torch.cuda.synchronize()
    if td is not None:
        stage("nccl teardown", lambda: td.destroy_process_group())
    say("done")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: gpu_warmup_script.py MODEL_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
