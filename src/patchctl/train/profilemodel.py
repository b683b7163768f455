"""What a training profile holds, and the schema each of its TOML tables is checked against.

Apart from ``profiles.py`` (loading, version adaptation, placeholders) so that the frozen values
and the schemas that admit them read together: a new key is one ``Field`` and one dataclass field,
both in this file. ``profiles`` re-exports ``Profile``, ``Adapt`` and ``Gates``, which most of ``train``
imports from there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from patchctl.schema import Field

ROLLOUTS = ("hf", "vllm", "sglang")
ASSETS = ("smoke", "smoke-bytes", "cluster")
PREPARE = ("tiny-dataset",)

PROFILE_SCHEMA = {
    "description": Field(str, True, "one line"),
    "rollout": Field(str, True, '"hf", "vllm" or "sglang"', choices=ROLLOUTS),
    "assets": Field(
        str,
        True,
        '"smoke" or "smoke-bytes" (patchctl builds model and data; word-level or byte-level tokenizer) or "cluster"',
        choices=ASSETS,
    ),
    "overrides": Field(list, True, 'hydra overrides such as "data.train_batch_size=4"', item=str),
    "needs": Field(list, False, 'cluster path keys such as ["MODEL_PATH", "DATA_DIR"]', item=str),
    "prepare": Field(list, False, '["tiny-dataset"]', item=str),
    "requires": Field(list, False, "paths that must exist before the launch", item=str),
    "env": Field(dict, False, "a table of environment variables"),
    "defaults": Field(dict, False, "a table of placeholder defaults"),
    "gates": Field(dict, False, "a [profile.NAME.gates] table"),
    "ray_head_cpus": Field(int, False, "start a Ray head node with this many CPUs beside the trainer"),
    "adapt": Field(list, False, "[[profile.NAME.adapt]] tables: changes for some verl versions"),
}
#: one [[profile.NAME.adapt]] table: where a setting of the record no longer fits a verl release
#: (or the vLLM it pins), what replaces it there
ADAPT_SCHEMA = {
    "verl": Field(str, True, 'the verl versions it applies to, e.g. ">=0.9"'),
    "why": Field(str, True, "what no longer fits, and what replaces it"),
    "unset_env": Field(list, False, "the profile's env variables to leave out", item=str),
    "env": Field(dict, False, "env variables to set"),
    "overrides": Field(list, False, "hydra overrides to add (the user's still win)", item=str),
}
GATES_SCHEMA = {
    "min_steps": Field(int, False, "the fewest training steps the log must show"),
    "first_step_max_s": Field(int, False, "seconds from launch to the first step"),
    "learning_metric": Field(str, False, 'a metric such as "critic/score/mean"'),
    "learning_window": Field(int, False, "steps averaged at each end"),
    "learning_min_gain": Field(float, False, "how much the last window must exceed the first"),
    "agree_pearson_min": Field(float, False, "the lowest training/rollout_actor_probs_pearson_corr of a step"),
    "agree_probs_diff_max": Field(float, False, "the highest training/rollout_probs_diff_mean of a step"),
    "agree_kl_max": Field(float, False, "the highest |rollout_corr/kl| of a step"),
    "update_kl_min": Field(float, False, "the lowest |actor/ppo_kl| of a step with a non-zero advantage"),
}
#: the gates' keys that hold numbers (a TOML integer such as 1 is taken as 1.0)
FLOAT_GATES = tuple(k for k, f in GATES_SCHEMA.items() if f.type is float)


@dataclass(frozen=True)
class Gates:
    min_steps: int = 1
    first_step_max_s: float | None = None
    learning_metric: str | None = None
    learning_window: int = 5
    learning_min_gain: float = 0.3
    #: bars of the reward-independent gates (None: the profile does not judge it); see gates.py
    agree_pearson_min: float | None = None
    agree_probs_diff_max: float | None = None
    agree_kl_max: float | None = None
    update_kl_min: float | None = None
    #: why the command at hand leaves update_kl_min unjudged (set by minibatch.fit, never by a profile)
    update_kl_off: str = ""


@dataclass(frozen=True)
class Adapt:
    verl: str
    why: str
    unset_env: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    overrides: tuple[str, ...] = ()


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    rollout: str
    assets: str
    overrides: tuple[str, ...]
    needs: tuple[str, ...] = ()
    prepare: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    defaults: dict[str, str] = field(default_factory=dict)
    gates: Gates = Gates()
    #: when set, patchctl starts the Ray head node (this many CPUs) while verl imports
    ray_head_cpus: int | None = None
    #: per-version changes, applied by :func:`adapt` once the target's verl version is known
    adapt: tuple[Adapt, ...] = ()
