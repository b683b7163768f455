"""patchctl's weight fingerprints: copied beside the code hook as ``patchctl_hook_weights.py`` and
imported by it only in a process that executes verl's weight-sync modules (hook_site.py).

After every weight sync it records a fingerprint of every parameter, on both sides:

* the trainer's side (``BucketedWeightSender.async_send_weights``): each ``(name, tensor)`` the
  trainer sends, as it sends it: dtype, shape, sha256 of the bytes, the sum and the sum of
  absolute values in float64, and for a float32 tensor the sha256 of its bfloat16 and float16
  roundings (what an engine holding that dtype must hold, bit for bit);
* the engine's side (``vLLMColocateWorkerExtension.update_weights_from_ipc``): once every bucket
  is loaded, for each name the engine received, the part of the engine's own parameter that holds
  it (vLLM fuses q/k/v and gate/up along dim 0 and pads the vocabulary), fingerprinted the same way.
  A name the engine cannot place is recorded as ``unmapped``.

The records are ``{"event": "weights", "side": ..., "sync": k, "ms": ..., "params": {...}}`` lines
in the process's hook file; ``train/weightsmatch.py`` judges them after the run. Nothing here
decides, and a failure here never breaks the sync. Works on torch tensors and on any array with
``tobytes()``, ``dtype`` and ``shape`` (numpy: the CPU stand-in's).
"""

import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

_state = {"sent": 0, "loaded": 0}
_received: "dict[int, list[tuple[str, list[int]]]]" = {}
#: the fusions vLLM's dense models make (their ``packed_modules_mapping``), where a model has none
_PACKED = {"qkv_proj": ["q_proj", "k_proj", "v_proj"], "gate_up_proj": ["gate_proj", "up_proj"]}


def _dtype(t: Any) -> str:
    return str(getattr(t, "dtype", "?")).replace("torch.", "")


def _bytes(t: Any) -> bytes:
    if hasattr(t, "detach"):  # torch: through an integer view (numpy has no bfloat16)
        import torch

        c = t.detach().contiguous().cpu()
        ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[c.element_size()]
        return bytes(c.view(ints).numpy().tobytes())
    return bytes(t.tobytes())


def _sums(t: Any) -> "tuple[float, float]":
    if hasattr(t, "detach"):
        d = t.detach().double()
        return float(d.sum()), float(d.abs().sum())
    import numpy

    a = numpy.asarray(t, dtype=numpy.float64)
    return float(a.sum()), float(numpy.abs(a).sum())


def fingerprint(t: Any, roundings: bool = False) -> "dict[str, object]":
    import hashlib

    s, a = _sums(t)
    out: dict[str, object] = {
        "dtype": _dtype(t),
        "shape": [int(x) for x in getattr(t, "shape", ())],
        "sha": hashlib.sha256(_bytes(t)).hexdigest(),
        "sum": s,
        "abs": a,
    }
    if roundings and hasattr(t, "detach") and _dtype(t) == "float32":
        import torch

        out["as"] = {
            name: hashlib.sha256(_bytes(t.detach().to(dt))).hexdigest()
            for name, dt in (("bfloat16", torch.bfloat16), ("float16", torch.float16))
        }
    return out


def _wrap_sender(cls: Any, record: Callable[..., None]) -> None:
    run = cls.async_send_weights

    async def async_send_weights(self: Any, weights: Any, *args: Any, **kwargs: Any) -> Any:
        seen: dict[str, object] = {}
        spent = [0.0]

        def note(name: str, w: Any) -> None:
            t0 = time.perf_counter()
            try:
                seen[str(name)] = fingerprint(w, roundings=True)
            except Exception:
                seen[str(name)] = {"error": "fingerprint failed"}
            spent[0] += time.perf_counter() - t0

        if hasattr(weights, "__aiter__"):

            async def agen() -> AsyncIterator[tuple[Any, Any]]:
                async for name, w in weights:
                    note(name, w)
                    yield name, w

            it: Any = agen()
        else:

            def gen() -> Iterator[tuple[Any, Any]]:
                for name, w in weights:
                    note(name, w)
                    yield name, w

            it = gen()
        try:
            return await run(self, it, *args, **kwargs)
        finally:
            _state["sent"] += 1
            record("weights", side="trainer", sync=_state["sent"], ms=round(spent[0] * 1000, 3), params=seen)

    cls.async_send_weights = async_send_weights


def _wrap_engine(cls: Any, record: Callable[..., None]) -> None:
    load = cls._update_weights
    sync = cls.update_weights_from_ipc

    def _update_weights(self: Any, weights: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            weights = list(weights)
            _received.setdefault(id(self), []).extend(
                (str(n), [int(x) for x in getattr(t, "shape", ())]) for n, t in weights
            )
        except Exception:  # noqa: S110 - the load itself must still run
            pass
        return load(self, weights, *args, **kwargs)

    def update_weights_from_ipc(self: Any, *args: Any, **kwargs: Any) -> Any:
        _received[id(self)] = []
        try:
            return sync(self, *args, **kwargs)
        finally:
            _state["loaded"] += 1
            t0 = time.perf_counter()
            try:
                params = loaded(self, _received.pop(id(self), []))
            except Exception as exc:
                params = {"": {"error": f"{type(exc).__name__}: {exc}"[:300]}}
            ms = round((time.perf_counter() - t0) * 1000, 3)
            record("weights", side="engine", sync=_state["loaded"], ms=ms, params=params)

    cls._update_weights = _update_weights
    cls.update_weights_from_ipc = update_weights_from_ipc


def _model(worker: Any) -> Any:
    runner = getattr(worker, "model_runner", None)
    return getattr(runner, "model", None)


def loaded(worker: Any, received: "list[tuple[str, list[int]]]") -> "dict[str, object]":
    """Per name received: the fingerprint of the part of the engine's parameter that holds it."""
    model = _model(worker)
    if model is None:
        return {"": {"error": "no model_runner.model on the worker"}}
    try:
        named = dict(model.named_parameters(remove_duplicate=False))
    except TypeError:
        named = dict(model.named_parameters())
    packed = dict(getattr(model, "packed_modules_mapping", None) or _PACKED)
    shapes = {n: s for n, s in received}
    out: dict[str, object] = {}
    for name, shape in received:
        part = _part(name, shape, named, packed, shapes)
        out[name] = {"unmapped": True} if part is None else fingerprint(part)
    return out


def _part(
    name: str,
    shape: "list[int]",
    named: "dict[str, Any]",
    packed: "dict[str, list[str]]",
    shapes: "dict[str, list[int]]",
) -> Any:
    rows = shape[0] if shape else 0
    if name in named:
        p = named[name]
        have = [int(x) for x in getattr(p, "shape", ())]
        if have == shape:
            return p
        if shape and have[1:] == shape[1:] and have[0] >= rows:  # a padded vocabulary
            return p[:rows]
        return None
    for fused, shards in packed.items():
        for i, shard in enumerate(shards):
            key = f".{shard}."
            if key not in name:
                continue
            target = name.replace(key, f".{fused}.")
            p = named.get(target)
            if p is None:
                return None
            offset = 0
            for earlier in shards[:i]:
                s = shapes.get(name.replace(key, f".{earlier}."))
                if s is None:
                    return None
                offset += s[0]
            have = [int(x) for x in getattr(p, "shape", ())]
            if have[1:] != shape[1:] or offset + rows > have[0]:
                return None
            return p[offset : offset + rows]
    return None


#: module -> (class, wrapper) of the weight-sync code this file fingerprints
TARGETS = {
    "verl.workers.rollout.vllm_rollout.bucketed_weight_transfer": ("BucketedWeightSender", _wrap_sender),
    "verl.workers.rollout.vllm_rollout.utils": ("vLLMColocateWorkerExtension", _wrap_engine),
}


def install(name: str, module: Any, record: Callable[..., None]) -> None:
    cls_name, wrap = TARGETS[name]
    cls: Any = getattr(module, cls_name, None)
    if isinstance(cls, type) and not getattr(cls, "_patchctl_weights", False):
        wrap(cls, record)
        setattr(cls, "_patchctl_weights", True)  # noqa: B010 - an attribute of verl's class, not declared there
