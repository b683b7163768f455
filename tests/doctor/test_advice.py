"""Fixes that fit: OOM advice per kind of memory, versions seen and verl's pins, and every fix a
command or a named setting with a value."""

from __future__ import annotations

import re
import textwrap

import pytest

from patchctl.doctor import diagnose, load_signatures, verl_pins
from patchctl.doctor.matcher import Match

SIGNATURES = load_signatures()
SETTING = re.compile(r"^\+?[A-Za-z_][\w.]*=[^\s<>]+( \(.+\))?$")
REQUIREMENT = re.compile(r"^[A-Za-z][\w.-]*(\[[\w,]+\])?([<>=!~]=?[\w.*+]+,?)*( \(.+\))?$")
COMMANDS = (
    "python3",
    "ray",
    "ulimit",
    "nvidia-smi",
    "systemctl",
    "ss",
    "ip",
    "free",
    "dmesg",
    "docker",
    "mount",
    "rm",
    "unset",
    "echo",
    "ldconfig",
    "df",
    "grep",
    "nc",
    "sacct",
    "sinfo",
    "srun",
)


def only(lines: list[str]) -> Match:
    (m,) = diagnose(lines, SIGNATURES).matches
    return m


def test_oom_advice_differs_for_training_the_vllm_kv_cache_and_host_ram():
    training = only(
        [
            '  File "/verl/verl/workers/actor/dp_actor.py", line 3, in update_policy',
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB.",
        ]
    )
    kv = only(
        [
            (
                "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
                "when initializing the engine."
            )
        ]
    )
    vllm = only(["cuda error: out of memory at /workspace/csrc/cumem_allocator.cpp:62"])
    host = only(["ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory."])
    assert [m.signature.id for m in (training, kv, vllm, host)] == [
        "training-oom",
        "vllm-kv-cache-no-memory",
        "vllm-gpu-oom",
        "host-ram-oom",
    ]
    share = {
        m.signature.id: float(t.split("=")[1])
        for m in (kv, vllm)
        for k, t in m.resolves()
        if t.startswith("actor_rollout_ref.rollout.gpu_memory_utilization=")
    }
    assert share["vllm-kv-cache-no-memory"] > share["vllm-gpu-oom"], "the KV cache needs a larger share, not a smaller"
    assert any("ppo_micro_batch_size_per_gpu=1" in t for _, t in training.resolves())
    assert any(t.startswith("ray logs raylet.out") for _, t in host.resolves())
    assert not any("gpu_memory_utilization" in t for _, t in training.resolves() + host.resolves())


@pytest.mark.parametrize("sig", SIGNATURES, ids=lambda s: s.id)
def test_every_fix_is_a_command_or_a_named_setting_with_a_value(sig):
    m = Match(sig, 1, "", 1, 1)  # no captures: each slot takes its default
    for kind, text in m.resolves():
        if kind in ("env", "override"):
            assert SETTING.match(text), f"{sig.id}: {kind} {text!r} is not NAME=VALUE"
        elif kind == "command":
            assert text.split()[0] in COMMANDS, f"{sig.id}: command {text!r}"
        elif kind == "package":
            assert REQUIREMENT.match(text), f"{sig.id}: package {text!r}"
        else:
            assert kind == "patch" and "/" in text


def test_a_fix_takes_the_values_the_log_shows():
    m = only(
        [
            (
                "(raylet) A worker died or was killed while executing a task by an unexpected system error. Worker ID: "
                "cd7df84926662bde505bd4864a9431db7b743478d4d69e9935bce20d Node ID: 6b5f36c96b "
                "Worker IP address: 10.29.214.5"
            )
        ]
    )
    assert ("command", "ray logs worker-cd7df849*out -ip 10.29.214.5") in m.resolves()
    port = only(
        [
            (
                "RuntimeError: The server socket has failed to listen on any local network address. port: 20014, "
                "useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use"
            )
        ]
    )
    assert ("command", "ss -ltnp 'sport = :20014'") in port.resolves()


def test_a_version_mismatch_names_the_versions_the_log_shows():
    m = only(
        [
            "vllm         : 0.8.3",
            "torch        : 2.6.0",
            "tensordict 0.6.2 requires torch>=2.5.0, but you have torch 2.4.0+cu124 which is incompatible.",
        ]
    )
    assert m.signature.id == "version-mismatch"
    assert m.seen == "vllm 0.8.3; torch 2.6.0, 2.4.0+cu124; tensordict 0.6.2"


def test_the_pins_of_a_verl_release_tree(tmp_path):
    (tmp_path / "PKG-INFO").write_text(
        "Metadata-Version: 2.1\nName: verl\nVersion: 0.6.1\n"
        "Requires-Dist: torch==2.8.0\nRequires-Dist: numpy\n"
        'Requires-Dist: vllm<=0.11.0,>=0.8.5; extra == "vllm"\n'
    )
    where, pins = verl_pins(tmp_path)
    assert where.endswith("PKG-INFO") and pins == ("torch==2.8.0", "vllm<=0.11.0,>=0.8.5")


def test_the_pins_of_a_verl_checkout(tmp_path):
    (tmp_path / "setup.py").write_text(
        textwrap.dedent("""\
        install_requires = ["ray[default]>=2.41.0", "tensordict>=0.8.0,<=0.10.0,!=0.9.0", "numpy"]
        VLLM_REQUIRES = ["vllm>=0.8.5,<=0.11.0"]
        setup(name="verl", install_requires=install_requires)
        """)
    )
    assert verl_pins(tmp_path)[1] == (
        "ray[default]>=2.41.0",
        "tensordict>=0.8.0,<=0.10.0,!=0.9.0",
        "vllm>=0.8.5,<=0.11.0",
    )


@pytest.mark.parametrize(
    "files,why", [({}, "has neither PKG-INFO nor setup.py"), ({"setup.py": "def ("}, "cannot be parsed")]
)
def test_unreadable_pins_say_why(tmp_path, files, why):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    where, pins = verl_pins(tmp_path)
    assert why in where and pins == ()
