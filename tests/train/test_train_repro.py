"""smoke-vllm's reproducible rollout (train/hook_repro.py, through the code hook): one seed per
sample, distinct within a GRPO group and equal across reruns; seeded prompt ids; a fixed batch order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from patchctl.train import codehook, hook_repro, smoke
from patchctl.train.profiles import adapt, load_profile

GROUP = 16


def test_a_groups_samples_get_distinct_seeds_and_a_rerun_the_same() -> None:
    first = [hook_repro.sample_seed(42, 3, 7, "u-7", s) for s in range(GROUP)]
    again = [hook_repro.sample_seed(42, 3, 7, "u-7", s) for s in range(GROUP)]
    assert len(set(first)) == GROUP, "two samples of one group would draw the same tokens"
    assert first == again
    assert all(0 <= s < 2**31 for s in first)
    # another step, prompt or base seed draws afresh
    assert hook_repro.sample_seed(42, 4, 7, "u-7", 0) != first[0]
    assert hook_repro.sample_seed(42, 3, 8, "u-8", 0) != first[0]
    assert hook_repro.sample_seed(43, 3, 7, "u-7", 0) != first[0]


def test_prompt_ids_are_a_seeded_sequence_of_uuid4s() -> None:
    a, b = hook_repro.Uuids(42), hook_repro.Uuids(42)
    ids = [str(a.uuid4()) for _ in range(64)]
    assert ids == [str(b.uuid4()) for _ in range(64)]
    assert len(set(ids)) == 64
    assert all(len(i) == 36 and i[14] == "4" for i in ids)  # still version-4 UUIDs
    assert str(hook_repro.Uuids(7).uuid4()) != ids[0]
    assert a.UUID is hook_repro._uuid.UUID  # the rest of the module is the real one


def test_greedy_or_already_seeded_sampling_is_left_alone() -> None:
    kw = {"session_id": 1, "uid": "u", "global_steps": 2, "index": 5}
    params, rid = hook_repro.seeded({"temperature": 1.0}, 42, kw)
    assert params["seed"] == hook_repro.sample_seed(42, 2, 5, "u", 1) and rid == "pc-u-1"
    assert hook_repro.seeded({"temperature": 0}, 42, kw) == ({"temperature": 0}, None)
    assert hook_repro.seeded({"temperature": 1.0, "seed": 9}, 42, kw)[0]["seed"] == 9


AGENT = """
from uuid import uuid4
class SingleTurnAgentLoop:
    async def run(self, sampling_params, priority=0, **kwargs):
        return {"seed": sampling_params.get("seed"), "request_id": uuid4().hex}
"""
TRAINER = """
import uuid
def prompt_ids(n):
    return [str(uuid.uuid4()) for _ in range(n)]
"""
PROBE = """
import asyncio, json
from verl.experimental.agent_loop.single_turn_agent_loop import SingleTurnAgentLoop
from verl.trainer.ppo.v1.trainer_base import prompt_ids
uids = prompt_ids(2)
loop = SingleTurnAgentLoop()
out = [asyncio.run(loop.run({"temperature": 1.0}, uid=u, session_id=s, global_steps=1, index=i))
       for i, u in enumerate(uids) for s in range(4)]
print(json.dumps({"uids": uids, "samples": out}))
"""


def _verl(root: Path) -> None:
    for rel, text in {
        "verl/__init__.py": "",
        "verl/experimental/__init__.py": "",
        "verl/experimental/agent_loop/__init__.py": "",
        "verl/experimental/agent_loop/single_turn_agent_loop.py": AGENT,
        "verl/trainer/__init__.py": "",
        "verl/trainer/ppo/__init__.py": "",
        "verl/trainer/ppo/v1/__init__.py": "",
        "verl/trainer/ppo/v1/trainer_base.py": TRAINER,
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _probe(tree: Path, run_dir: Path, seed: str | None) -> dict[str, list]:
    hook = codehook.install(run_dir)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHCTL_")}
    env.update({codehook.ENV_DIR: str(hook / "records"), codehook.ENV_WATCH: "verl"})
    env["PYTHONPATH"] = os.pathsep.join([str(hook), str(tree)])
    if seed is not None:
        env[hook_repro.ENV] = seed
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_the_code_hook_seeds_verls_agent_loop_and_prompt_ids_in_a_real_process(tmp_path: Path) -> None:
    """Two runs of a verl-shaped tree under the installed hook: the same prompt ids, seeds and
    request ids; four distinct seeds per group; without the variable, verl's own randomness."""
    _verl(tmp_path / "tree")
    one = _probe(tmp_path / "tree", tmp_path / "run1", "42")
    two = _probe(tmp_path / "tree", tmp_path / "run2", "42")
    assert one == two
    seeds = [s["seed"] for s in one["samples"]]
    assert all(isinstance(s, int) for s in seeds)
    assert len(set(seeds[:4])) == 4 and len(set(seeds[4:])) == 4
    assert [s["request_id"] for s in one["samples"][:2]] == [f"pc-{one['uids'][0]}-0", f"pc-{one['uids'][0]}-1"]
    off = _probe(tmp_path / "tree", tmp_path / "run3", None)
    assert {s["seed"] for s in off["samples"]} == {None}
    assert off["uids"] != _probe(tmp_path / "tree", tmp_path / "run4", None)["uids"]


def test_smoke_vllm_asks_for_it_on_verl_09() -> None:
    profile, _ = adapt(load_profile("smoke-vllm"), "0.9.1")
    assert "data.seed=42" in profile.overrides
    assert "actor_rollout_ref.actor.fsdp_config.full_determinism=True" in profile.overrides
    assert f"+ray_kwargs.ray_init.runtime_env.env_vars.{hook_repro.ENV}='42'" in profile.overrides
    # never verl's rollout switch: one seed for every sample of a group
    assert not any(o.startswith("actor_rollout_ref.rollout.full_determinism=True") for o in profile.overrides)
    assert profile.env["VLLM_BATCH_INVARIANT"] == "1" and profile.env["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    older, _ = adapt(load_profile("smoke-vllm"), "0.6.0")
    assert "data.seed=42" not in older.overrides  # 0.6's config has no such key


BUFFER = """
class ReplayBuffer:
    # verl 0.9.1's two methods, as they are (minus TransferQueue)
    def __init__(self, poll_interval=2.0, **kw):
        self.poll_interval = poll_interval
    def _select_prompt_uids(self, partition_id, sampleable_keys, batch_size):
        steps = self.steps
        ordered_keys = sorted(sampleable_keys, key=lambda key: steps.get(key, 0))
        return ordered_keys[:batch_size], None, steps
    def _materialize_batch(self, partition_id, selected_prompt_uids, partition_snapshot):
        keys = []
        selected = set(selected_prompt_uids)
        for key, tag in partition_snapshot.items():
            if key.split("_")[0] in selected:
                keys.append(key)
        return keys
"""
ORDER = """
import importlib.util, json, random, sys
spec = importlib.util.spec_from_file_location('s', sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
b = m.QuickPollReplayBuffer()
b.steps = {u: 1 for u in "abcdef"}
snapshot = [f"{u}_{s}_0" for u in "abcdef" for s in range(4)]
random.seed(int(sys.argv[2]))
random.shuffle(snapshot)  # the order rollouts finished in
uids, _, _ = b._select_prompt_uids("train", set("abcdef"), 3)
print(json.dumps(b._materialize_batch("train", uids, {k: {} for k in snapshot})))
"""


def test_a_steps_batch_comes_in_one_order_whatever_order_the_samples_finished_in(tmp_path: Path) -> None:
    (tmp_path / "verl/trainer/ppo/v1").mkdir(parents=True)
    (tmp_path / "verl/trainer/ppo/v1/replay_buffer.py").write_text(BUFFER)
    outs = set()
    for shuffle in range(6):
        env = {**os.environ, "PYTHONPATH": str(tmp_path), "PYTHONHASHSEED": str(shuffle)}
        done = subprocess.run(
            [sys.executable, "-c", ORDER, str(smoke.sampler_file()), str(shuffle)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        outs.add(done.stdout)
    assert len(outs) == 1
    assert json.loads(outs.pop()) == [f"{u}_{s}_0" for u in "abc" for s in range(4)]
