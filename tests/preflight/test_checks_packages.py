"""torch, vLLM, flash-attn and Ray checks, each probe run for real against stand-in packages on
PYTHONPATH (the CPU machine has no CUDA torch, vLLM or flash-attn), and against the machine itself."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from patchctl.preflight import Status
from patchctl.target import Target

FAKE_TORCH = """
__version__ = "{version}"
class version:
    cuda = {cuda!r}
class _Props:
    def __init__(self, i):
        self.name, self.total_memory, self.major, self.minor = "NVIDIA H100 80GB HBM3", 85 * 2**30, 9, 0
class cuda:
    @staticmethod
    def is_available(): return {available}
    @staticmethod
    def device_count(): return {count}
    @staticmethod
    def get_device_properties(i): return _Props(i)
"""


def torch_site(fake_site, version="2.8.0+cu128", cuda="12.8", available=True, count=2):
    return fake_site(
        {"torch/__init__.py": FAKE_TORCH.format(version=version, cuda=cuda, available=available, count=count)}
    )


def test_torch_with_gpus(one, make_ctx, fake_site):
    r = one(make_ctx({"PYTHONPATH": torch_site(fake_site)}), "torch")
    assert r.status is Status.PASS
    assert "torch 2.8.0+cu128, built for CUDA 12.8; 2 GPUs: 2 x NVIDIA H100 80GB HBM3 (85.0 GiB, sm 9.0)" in r.value


def test_torch_cpu_build(one, make_ctx, fake_site):
    r = one(make_ctx({"PYTHONPATH": torch_site(fake_site, "2.8.0+cpu", None, False, 0)}), "torch")
    assert r.status is Status.FAIL and "CPU-only build" in r.value and "download.pytorch.org" in r.fix


def test_torch_cuda_build_without_gpu(one, make_ctx, fake_site):
    r = one(make_ctx({"PYTHONPATH": torch_site(fake_site, available=False, count=0)}), "torch")
    assert r.status is Status.FAIL and "no GPU usable" in r.value


def test_torch_hidden_by_empty_cuda_visible_devices(one, make_ctx, fake_site):
    ctx = make_ctx({"PYTHONPATH": torch_site(fake_site, available=False, count=0), "CUDA_VISIBLE_DEVICES": ""})
    r = one(ctx, "torch")
    assert r.status is Status.FAIL and "CUDA_VISIBLE_DEVICES is empty" in r.value


def test_torch_whose_import_segfaults(one, make_ctx, fake_site):
    site = fake_site({"torch/__init__.py": "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"})
    r = one(make_ctx({"PYTHONPATH": site}), "torch")
    assert r.status is Status.FAIL and "the torch probe crashed with SIGSEGV" in r.value


def test_torch_on_this_machine(one, make_ctx):
    r = one(make_ctx(), "torch")
    if importlib.util.find_spec("torch") is None:
        assert r.status is Status.FAIL and "torch is not installed in" in r.value and "pip install torch" in r.fix
    else:  # the CPU machine has at most a CPU build and no GPU
        assert r.status is Status.FAIL


VLLM_012 = {
    "vllm/__init__.py": "__version__ = '{version}'\n",
    "vllm/attention/__init__.py": "",
    "vllm/attention/backends/__init__.py": "",
    "vllm/attention/backends/registry.py": """
        import enum
        class AttentionBackendEnum(enum.Enum):
            FLASH_ATTN = "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"
            TRITON_ATTN = "vllm.v1.attention.backends.triton_attn.TritonAttentionBackend"
            TORCH_SDPA = ""
            FLASHINFER = "vllm.v1.attention.backends.flashinfer.FlashInferBackend"
            def get_path(self):
                if not self.value:
                    raise ValueError(f"Backend {self.name} must be registered before use.")
                return self.value
        """,
}
VLLM_OLD = {
    "vllm/__init__.py": "__version__ = '0.8.5'\n",
    "vllm/platforms/__init__.py": "",
    "vllm/platforms/interface.py": "import enum\nclass _Backend(enum.Enum):\n    FLASH_ATTN = 1\n    XFORMERS = 2\n"
    "    TORCH_SDPA = 3\n",
}


def vllm_ctx(make_ctx, fake_site, files=VLLM_012, version="0.12.0", backend=None, **fields):
    site = fake_site({k: v.replace("{version}", version) for k, v in files.items()})
    env = {"PYTHONPATH": site, **({"VLLM_ATTENTION_BACKEND": backend} if backend else {})}
    return make_ctx(env, **fields)


def test_torch_sdpa_named_but_not_implemented(one, make_ctx, fake_site):
    r = one(vllm_ctx(make_ctx, fake_site, backend="TORCH_SDPA"), "vllm_attention_backend")
    assert r.status is Status.FAIL
    assert "Backend TORCH_SDPA must be registered before use" in r.value and "FLASH_ATTN" in r.fix


def test_flash_attn_backend_passes(one, make_ctx, fake_site):
    r = one(vllm_ctx(make_ctx, fake_site, backend="FLASH_ATTN"), "vllm_attention_backend")
    assert r.status is Status.PASS


def test_unknown_backend_lists_the_valid_ones(one, make_ctx, fake_site):
    r = one(vllm_ctx(make_ctx, fake_site, backend="XFORMERS"), "vllm_attention_backend")
    assert r.status is Status.FAIL and "FLASH_ATTN, TRITON_ATTN, FLASHINFER" in r.value
    assert "TORCH_SDPA" not in r.value.split("it has:")[1]


def test_old_vllm_enum_layout(one, make_ctx, fake_site):
    ctx = vllm_ctx(make_ctx, fake_site, files=VLLM_OLD, backend="XFORMERS_VLLM_V1")
    assert one(ctx, "vllm_attention_backend").status is Status.PASS


def test_backend_variable_unset(one, make_ctx, fake_site):
    assert one(vllm_ctx(make_ctx, fake_site), "vllm_attention_backend").status is Status.PASS


def test_backend_without_vllm_is_skipped(one, make_ctx):
    r = one(make_ctx({"VLLM_ATTENTION_BACKEND": "TORCH_SDPA"}), "vllm_attention_backend")
    if importlib.util.find_spec("vllm") is None:
        assert r.status is Status.SKIP


def test_vllm_inside_and_outside_the_declared_range(one, make_ctx, fake_site, tmp_path):
    target = Target(tmp_path, "0.6.1", "verl==0.6.1", None, False)
    spec = {"vllm": ">=0.8.5,<=0.11.0"}
    inside = one(
        vllm_ctx(
            make_ctx,
            fake_site,
            version="0.10.1",
            target=target,
            requirements=spec,
            requirements_source="verl 0.6.1 setup.py",
        ),
        "vllm",
    )
    assert (
        inside.status is Status.PASS
        and "inside verl 0.6.1 (verl 0.6.1 setup.py)'s range >=0.8.5,<=0.11.0" in inside.value
    )
    outside = one(vllm_ctx(make_ctx, fake_site, version="0.12.0", target=target, requirements=spec), "vllm")
    assert outside.status is Status.WARN and "outside" in outside.value and "vllm>=0.8.5,<=0.11.0" in outside.fix


def test_vllm_built_for_another_torch(one, make_ctx, fake_site):
    site = fake_site(
        {"vllm/__init__.py": "raise ImportError('/x/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi')"}
    )
    r = one(make_ctx({"PYTHONPATH": site}), "vllm")
    assert r.status is Status.FAIL and "does not import" in r.value and "another torch" in r.fix


def test_vllm_missing_on_this_machine(one, make_ctx, tmp_path):
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here")
    r = one(make_ctx(), "vllm")
    assert r.status is Status.WARN
    assert r.value.startswith("vLLM is not installed: the vllm rollout cannot run; the hf rollout can")
    hf = tmp_path / "verl" / "workers" / "rollout"
    hf.mkdir(parents=True)
    (hf / "hf_rollout.py").write_text("")
    r = one(make_ctx(target=Target(tmp_path, "0.5.0", "t", None, False)), "vllm")
    assert r.status is Status.WARN and "the hf rollout can (actor_rollout_ref.rollout.name=hf)" in r.value


def test_flash_attn_states(one, make_ctx, fake_site):
    ok = fake_site({"flash_attn/__init__.py": "__version__ = '2.8.3'\n", "flash_attn/flash_attn_interface.py": ""})
    assert one(make_ctx({"PYTHONPATH": ok}), "flash_attn").value == "flash-attn 2.8.3"
    abi = fake_site(
        {
            "flash_attn/__init__.py": "raise ImportError('/x/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so:"
            " undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationESs')"
        }
    )
    r = one(make_ctx({"PYTHONPATH": abi}), "flash_attn")
    assert r.status is Status.FAIL and "undefined symbol" in r.value and "--force-reinstall" in r.fix
    if importlib.util.find_spec("flash_attn") is None:
        r = one(make_ctx(), "flash_attn")
        assert (
            r.status is Status.WARN and "flash-attn is not installed" in r.value and "attn_implementation=sdpa" in r.fix
        )


FAKE_RAY = """
__version__ = "2.49.2"
import os
_fail = os.environ.get("FAKE_RAY_FAIL")
def init(**kw):
    if _fail == "init":
        raise RuntimeError("Failed to register worker 01000000 to Raylet. IOError: [RayletClient] Unable to register")
    global _kw; _kw = kw
def cluster_resources(): return {"CPU": float(_kw.get("num_cpus", 8)), "GPU": 0.0}
class _Remote:
    def __init__(self, f): self.f = f
    def remote(self): return self.f()
def remote(**opts): return _Remote
def get(value, timeout=None):
    if _fail == "task":
        raise TimeoutError("Get timed out: some object(s) not ready.")
    return value
def shutdown(): pass
"""


@pytest.mark.parametrize(
    "fail,status,text",
    [
        (None, Status.PASS, "local, num_cpus=2"),
        ("init", Status.FAIL, "ray.init (local, num_cpus=2) failed"),
        ("task", Status.FAIL, "a task did not run"),
    ],
)
def test_ray_stages(one, make_ctx, fake_site, fail, status, text):
    site = fake_site({"ray/__init__.py": FAKE_RAY})
    r = one(make_ctx({"PYTHONPATH": site, **({"FAKE_RAY_FAIL": fail} if fail else {})}), "ray")
    assert r.status is status and text in r.value
    if fail:
        assert "ray_init.num_cpus" in r.fix


def test_ray_with_a_stale_cluster_address(one, make_ctx, fake_site, tmp_path):
    """Seen on the GPU machine after a killed `ray start --head`: Ray's address file outlives the head,
    and ray.init(num_cpus=...) then refuses to start a local instance."""
    site = fake_site(
        {
            "ray/__init__.py": FAKE_RAY.replace(
                "def init(**kw):",
                "def init(**kw):\n"
                "    if os.path.exists(os.path.join(os.environ['RAY_TMPDIR'], 'ray', 'ray_current_cluster')):\n"
                "        raise ValueError('When connecting to an existing cluster, '\n"
                "                         'num_cpus and num_gpus must not be provided.')",
            )
        }
    )
    (tmp_path / "raytmp" / "ray").mkdir(parents=True)
    env = {"PYTHONPATH": site, "RAY_TMPDIR": str(tmp_path / "raytmp")}
    assert one(make_ctx(env), "ray").status is Status.PASS
    stale = tmp_path / "raytmp" / "ray" / "ray_current_cluster"
    stale.write_text("127.0.0.1:43117")
    r = one(make_ctx(env), "ray")
    assert r.status is Status.FAIL and "num_cpus and num_gpus must not be provided" in r.value
    assert f"{stale} names 127.0.0.1:43117 (written by an earlier `ray start`)" in r.value
    assert r.fix.startswith(f"if no Ray cluster should be running, `ray stop` (it removes {stale})")
    assert "RAY_ADDRESS=127.0.0.1:43117" in r.fix


def test_ray_outside_the_declared_range(one, make_ctx, fake_site):
    site = fake_site({"ray/__init__.py": FAKE_RAY})
    r = one(make_ctx({"PYTHONPATH": site}, requirements={"ray": ">=2.50"}), "ray")
    assert r.status is Status.WARN and "ray[default]>=2.50" in r.fix


def test_ray_on_this_machine(one, make_ctx):
    r = one(make_ctx(), "ray")
    if importlib.util.find_spec("ray") is None:
        assert r.status is Status.FAIL and r.value.startswith(f"Ray is not installed in {sys.executable}")
        assert r.fix == "pip install 'ray[default]'"


def test_driver_version_from_proc():
    from patchctl.preflight.probes.torch_info import kernel_module

    assert (
        kernel_module("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Tue Oct 10 19:42:23 UTC 2023")
        == "535.129.03"
    )
    assert (
        kernel_module(
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
            "(dvs-builder@U16-I3-B03-4-3)  Tue Sep 23 09:28:39 UTC 2025"
        )
        == "580.95.05"
    )
