"""patchctl's reproducibility hook: copied beside the code hook as ``patchctl_hook_repro.py`` and
imported by it only where ``PATCHCTL_REPRO_SEED`` is set (the smoke-vllm profile sets it for every
Ray actor of the job through ``ray_kwargs.ray_init.runtime_env.env_vars``).

Why a hook, not verl's ``rollout.full_determinism``: verl gives every request of a replica the same
vLLM seed, so the n samples of a GRPO group come out identical, every advantage is 0 and the run
learns nothing. Here each sample gets its own seed, from the prompt and the sample's place in its
group, so a group's samples differ and a rerun draws the same ones:

* ``SingleTurnAgentLoop.run``: the sampling parameters get ``seed`` = :func:`sample_seed` of the
  base seed, the training step, the prompt's dataset index and id, and the sample's index in its
  group (verl's ``session_id``); the request id vLLM schedules by is ``pc-<uid>-<sample>``
  instead of a ``uuid4``. A sample that already has a seed, or greedy sampling, is left alone;
* the trainer's prompt ids (``uid``, the GRPO group key, a ``uuid4`` per prompt): a seeded
  sequence of version-4 UUIDs in the order the trainer asks for them.

Nothing here decides, and a failure leaves verl's behaviour as it was. Standard library only.
"""

import contextvars
import hashlib
import os
import uuid as _uuid
from typing import Any

ENV = "PATCHCTL_REPRO_SEED"
_RID: "contextvars.ContextVar[str | None]" = contextvars.ContextVar("patchctl_request_id", default=None)


def base_seed() -> "int | None":
    try:
        return int(os.environ[ENV])
    except (KeyError, ValueError):
        return None


def _part(value: Any) -> str:
    """A key part as text: ints as ints (numpy, 0-d tensors), anything else as its text."""
    try:
        return str(int(value))
    except (TypeError, ValueError):
        return str(value)


def sample_seed(base: int, step: Any, prompt: Any, uid: Any, sample: Any) -> int:
    """The seed of one sample: 31 bits of sha256 over (base, step, prompt index, prompt id, sample
    index). Distinct within a group (the sample index differs), equal across reruns (no state)."""
    text = ":".join((str(base), _part(step), _part(prompt), _part(uid), _part(sample)))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") & 0x7FFFFFFF


class Uuids:
    """A stand-in for the ``uuid`` module inside one verl module: ``uuid4()`` gives the seeded
    sequence, everything else is the real module's."""

    def __init__(self, base: int) -> None:
        self._base, self._count = base, 0

    def uuid4(self) -> _uuid.UUID:
        self._count += 1
        digest = hashlib.sha256(f"{self._base}:uid:{self._count}".encode()).digest()
        return _uuid.UUID(bytes=digest[:16], version=4)

    def __getattr__(self, name: str) -> Any:
        return getattr(_uuid, name)


class _Hex:
    def __init__(self, text: str) -> None:
        self.hex = text

    def __str__(self) -> str:
        return self.hex


def request_uuid4() -> Any:
    """``uuid4`` as the agent loop module sees it: inside a seeded sample, an object whose ``hex``
    is that sample's request id; elsewhere a real ``uuid4``."""
    rid = _RID.get()
    return _Hex(rid) if rid else _uuid.uuid4()


def seeded(params: "dict[str, Any]", base: int, kwargs: "dict[str, Any]") -> "tuple[dict[str, Any], str | None]":
    """The sampling parameters with this sample's seed, and its request id (None: left alone)."""
    sample, uid = kwargs.get("session_id"), kwargs.get("uid")
    if sample is None or uid is None or "seed" in params:
        return params, None
    try:
        if float(params.get("temperature", 1.0)) <= 0:
            return params, None
    except (TypeError, ValueError):
        return params, None
    out = dict(params)
    out["seed"] = sample_seed(base, kwargs.get("global_steps"), kwargs.get("index"), uid, sample)
    return out, f"pc-{_part(uid)}-{_part(sample)}"


def _wrap_agent(module: Any, base: int) -> None:
    found = getattr(module, "SingleTurnAgentLoop", None)
    if not isinstance(found, type) or getattr(found, "_patchctl_repro", False):
        return
    cls: Any = found  # verl's class: its attributes are not known here
    run = cls.run

    async def run_seeded(self: Any, sampling_params: Any, *args: Any, **kwargs: Any) -> Any:
        params, rid = seeded(dict(sampling_params), base, kwargs)
        token = _RID.set(rid)
        try:
            return await run(self, params, *args, **kwargs)
        finally:
            _RID.reset(token)

    cls.run = run_seeded
    setattr(cls, "_patchctl_repro", True)  # noqa: B010 - an attribute of verl's class, not declared there
    if hasattr(module, "uuid4"):
        module.uuid4 = request_uuid4


_UIDS: "dict[str, Uuids]" = {}


def _uids(module: Any, base: int) -> None:
    if getattr(module, "uuid", None) is _uuid:
        # one sequence per process: the trainer asks for its prompt ids in a fixed order
        module.uuid = _UIDS.setdefault("process", Uuids(base))


#: verl's modules -> what to do once each has run
TARGETS = {
    "verl.trainer.ppo.v1.trainer_base": _uids,
    "verl.trainer.ppo.ray_trainer": _uids,
    "verl.experimental.agent_loop.single_turn_agent_loop": _wrap_agent,
}


def install(name: str, module: Any) -> bool:
    """Seed ``module`` (one of :data:`TARGETS`) where the environment asks; True when done."""
    base = base_seed()
    if base is None or name not in TARGETS:
        return False
    TARGETS[name](module, base)
    return True
