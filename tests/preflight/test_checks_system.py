"""Variable, limit and filesystem checks against constructed environments."""

from __future__ import annotations

import resource

import pytest

from patchctl.preflight import Status
from patchctl.preflight.checks_system import judge_open_files


@pytest.mark.parametrize(
    "env,status,text",
    [
        (
            {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
            Status.PASS,
            "OMP_NUM_THREADS=1",
        ),
        ({"OMP_NUM_THREADS": "1"}, Status.WARN, "MKL_NUM_THREADS unset"),
        (
            {"OMP_NUM_THREADS": "0", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
            Status.FAIL,
            "OMP_NUM_THREADS=0",
        ),
        ({"OMP_NUM_THREADS": "four", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}, Status.FAIL, "four"),
    ],
)
def test_thread_variables(one, make_ctx, env, status, text):
    r = one(make_ctx(env), "threads")
    assert r.status is status and text in r.value
    if status is not Status.PASS:
        assert "=1" in r.fix


@pytest.mark.parametrize(
    "env,status,text",
    [
        ({"RAY_num_prestart_python_workers": "1", "RAY_worker_register_timeout_seconds": "600"}, Status.PASS, "=600"),
        ({}, Status.WARN, "RAY_worker_register_timeout_seconds unset"),
        ({"RAY_num_prestart_python_workers": "1", "RAY_worker_register_timeout_seconds": "30"}, Status.WARN, "=30"),
        ({"RAY_num_prestart_python_workers": "one", "RAY_worker_register_timeout_seconds": "600"}, Status.FAIL, "one"),
    ],
)
def test_ray_variables(one, make_ctx, env, status, text):
    r = one(make_ctx(env), "ray_env")
    assert r.status is status and text in r.value


@pytest.mark.parametrize(
    "value,status,text",
    [
        (None, Status.PASS, "unset"),
        ("0,1,2,3", Status.PASS, "4 GPUs"),
        ("GPU-8f3a,MIG-1c2d", Status.PASS, "2 GPUs"),
        ("0,1,0,1", Status.FAIL, "lists 0, 1 more than once"),
        ("", Status.FAIL, "CUDA sees no GPU"),
        ("0,gpu1,2", Status.WARN, "'gpu1' is not a GPU index"),
    ],
)
def test_cuda_visible_devices(one, make_ctx, value, status, text):
    r = one(make_ctx({} if value is None else {"CUDA_VISIBLE_DEVICES": value}), "cuda_visible_devices")
    assert r.status is status and text in r.value
    if value == "0,1,0,1":
        assert "Duplicate GPU detected" in r.fix and "0,1" in r.fix


def _meminfo(tmp_path, kib: int):
    path = tmp_path / "meminfo"
    path.write_text(f"MemTotal:       {kib} kB\nMemFree:        1000 kB\n")
    return path


def test_shm_large_enough(one, make_ctx, tmp_path):
    r = one(make_ctx(shm=tmp_path, meminfo=_meminfo(tmp_path, 1024)), "shm")
    assert r.status is Status.PASS and "RAM 0.0 GiB" in r.value


def test_shm_smaller_than_the_object_store(one, make_ctx, tmp_path):
    # 1 PiB of RAM: Ray would want 300 TiB of /dev/shm, which no temp filesystem has
    r = one(make_ctx(shm=tmp_path, meminfo=_meminfo(tmp_path, 2**40)), "shm")
    assert r.status is Status.WARN
    assert "--shm-size=" in r.fix and "/tmp instead of /dev/shm" in r.fix


def test_shm_missing(one, make_ctx, tmp_path):
    r = one(make_ctx(shm=tmp_path / "absent"), "shm")
    assert r.status is Status.FAIL and "absent" in r.value


@pytest.mark.parametrize(
    "soft,hard,status",
    [(65536, 65536, Status.PASS), (1024, 1048576, Status.WARN), (4096, 4096, Status.WARN), (256, 256, Status.FAIL)],
)
def test_open_files(soft, hard, status):
    v = judge_open_files(soft, hard)
    assert v.status is status
    if status is Status.WARN and hard >= 65536:
        assert "ulimit -n 65536" in v.fix and "hard limit allows" in v.fix


def test_open_files_on_this_machine(one, make_ctx):
    r = one(make_ctx(), "open_files")
    expected = judge_open_files(*resource.getrlimit(resource.RLIMIT_NOFILE))  # this process's own limits
    assert (r.status, r.value) == (expected.status, expected.value) and r.value.startswith("soft ")


def test_triton_cache_writable(one, make_ctx, tmp_path):
    r = one(make_ctx({"TRITON_CACHE_DIR": str(tmp_path)}), "triton_cache")
    assert r.status is Status.PASS and "writable" in r.value


def test_triton_cache_created_on_first_use(one, make_ctx, tmp_path):
    r = one(make_ctx({"TRITON_CACHE_DIR": str(tmp_path / "a" / "b")}), "triton_cache")
    assert r.status is Status.PASS and "will be created" in r.value


def test_triton_cache_default_under_home(one, make_ctx, tmp_path):
    r = one(make_ctx(), "triton_cache")
    assert r.status is Status.PASS and str(tmp_path / "home" / ".triton" / "cache") in r.value


def test_triton_cache_is_a_file(one, make_ctx, tmp_path):
    (tmp_path / "cache").write_text("")
    r = one(make_ctx({"TRITON_CACHE_DIR": str(tmp_path / "cache")}), "triton_cache")
    assert r.status is Status.FAIL and "TRITON_CACHE_DIR=/tmp/triton_cache" in r.fix


def test_python_version_against_the_declared_range(one, make_ctx):
    assert one(make_ctx(requirements={"python": ">=3.8"}), "python").status is Status.PASS
    r = one(make_ctx(requirements={"python": ">=4.0"}, requirements_source="verl 9.9 setup.py"), "python")
    assert r.status is Status.FAIL and "requires Python >=4.0" in r.value
