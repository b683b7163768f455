"""libcuda resolution the way Triton does it, in constructed machines: a temporary driver
directory listed by a fake ldconfig, a temporary CUDA prefix with or without its stubs dir."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from patchctl.preflight import Status
from patchctl.preflight.libcuda import judge_libcuda, ldconfig_text


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x7fELF")
    return path


@pytest.fixture
def machine(tmp_path, make_ctx):
    """Build a machine: ``machine(so1=..., so=..., stubs=..., listed=..., env=...)`` -> (ctx, paths)."""

    def build(
        *,
        so1: bool = True,
        so: bool = False,
        stubs: bool = True,
        stub_so1: bool = False,
        listed: bool = True,
        driver: bool = True,
        env: dict | None = None,
        ldconfig: bool = True,
    ):
        drv = tmp_path / "driver"
        drv.mkdir(exist_ok=True)
        if so1:
            _touch(drv / "libcuda.so.1")
        if so:
            _touch(drv / "libcuda.so")
        cuda = tmp_path / "cuda"
        stubs_dir = cuda / "lib64" / "stubs"
        (cuda / "lib64").mkdir(parents=True, exist_ok=True)
        if stubs:
            _touch(stubs_dir / "libcuda.so")
            if stub_so1:
                _touch(stubs_dir / "libcuda.so.1")
        fake = tmp_path / "ldconfig"
        lines = [f"\tlibcuda.so.1 (libc6,x86-64) => {drv}/libcuda.so.1"] if listed else []
        fake.write_text(
            f"#!/bin/sh\necho '{len(lines)} libs found in cache'\n" + "".join(f"echo '{ln}'\n" for ln in lines)
        )
        fake.chmod(0o755)
        ctl = _touch(tmp_path / "nvidiactl") if driver else tmp_path / "no-nvidiactl"
        ctx = make_ctx(
            {"CUDA_HOME": str(cuda), **(env or {})},
            ldconfig=str(fake if ldconfig else tmp_path / "none"),
            system_lib_dirs=(),
            nvidia_ctl=ctl,
        )
        return ctx, drv, stubs_dir

    return build


def judge(ctx, links="cuda"):
    return judge_libcuda(ctx, ldconfig_text(ctx.ldconfig), links, "Triton 3.3.1")


def test_versioned_driver_only_cannot_link_lcuda_and_names_the_stubs(machine):
    ctx, drv, stubs = machine(so1=True, so=False, stubs=True)
    v = judge(ctx)
    assert v.status is Status.FAIL and "cannot find -lcuda" in v.value and str(drv) in v.value
    assert f"TRITON_LIBCUDA_PATH={stubs}" in v.fix
    assert "does not help here" in v.fix  # the record's LD_LIBRARY_PATH fix is not read when ldconfig finds the driver


def test_without_a_stubs_dir_the_fix_is_the_symlink(machine):
    ctx, drv, _ = machine(so1=True, so=False, stubs=False)
    v = judge(ctx)
    assert v.status is Status.FAIL
    assert "TRITON_LIBCUDA_PATH" not in v.fix and f"ln -s {drv}/libcuda.so.1 {drv}/libcuda.so" in v.fix


def test_unversioned_library_next_to_the_driver_links(machine):
    ctx, drv, _ = machine(so1=True, so=True)
    v = judge(ctx)
    assert v.status is Status.PASS and f"{drv}/libcuda.so" in v.value and "via ldconfig" in v.value


def test_triton_libcuda_path_at_the_stubs_links(machine):
    ctx, _, stubs = machine(so1=True, so=False, env={})
    ctx2 = replace(ctx, env={**ctx.env, "TRITON_LIBCUDA_PATH": str(stubs)})
    v = judge(ctx2)
    assert v.status is Status.PASS and "via TRITON_LIBCUDA_PATH" in v.value


def test_library_path_counts_for_the_linker(machine, tmp_path):
    extra = tmp_path / "extra"
    _touch(extra / "libcuda.so")
    ctx, _, _ = machine(so1=True, so=False, env={"LIBRARY_PATH": str(extra)})
    assert judge(ctx).status is Status.PASS


def test_newer_triton_links_the_versioned_file(machine):
    ctx, _, _ = machine(so1=True, so=False)
    v = judge(ctx, links="libcuda.so.1")
    assert v.status is Status.PASS and "-l:libcuda.so.1" in v.value


def test_ld_library_path_fallback_needs_libcuda_so_1(machine):
    # ldconfig lists nothing; the stubs dir on LD_LIBRARY_PATH has only libcuda.so: Triton asserts
    ctx, _, stubs = machine(so1=False, listed=False, env={})
    ctx = replace(ctx, env={**ctx.env, "LD_LIBRARY_PATH": str(stubs)})
    v = judge(ctx)
    assert v.status is Status.FAIL and "libcuda.so cannot found" in v.value


def test_ld_library_path_fallback_with_a_versioned_stub(machine):
    ctx, _, stubs = machine(so1=False, listed=False, stub_so1=True)
    ctx = replace(ctx, env={**ctx.env, "LD_LIBRARY_PATH": f"/nonexistent:{stubs}"})
    v = judge(ctx)
    assert v.status is Status.PASS and "via LD_LIBRARY_PATH" in v.value


def test_no_driver_at_all_is_a_skip(machine):
    ctx, _, _ = machine(so1=False, listed=False, driver=False)
    v = judge(ctx)
    assert v.status is Status.SKIP and "no NVIDIA driver" in v.value


def test_stale_ldconfig_cache(machine):
    ctx, _drv, _ = machine(so1=False, listed=True)
    v = judge(ctx)
    assert v.status is Status.FAIL and "the file is gone" in v.value and "run ldconfig" in v.fix


def test_missing_ldconfig(machine):
    ctx, _, stubs = machine(ldconfig=False)
    v = judge(ctx)
    assert v.status is Status.FAIL and "is missing" in v.value and str(stubs) in v.fix


def test_the_probe_reads_how_installed_triton_links(one, machine, fake_site):
    site = fake_site(
        {
            "triton/__init__.py": "raise SystemExit('the probe must not import triton')\n",
            "triton/backends/nvidia/driver.py": "libraries = ['libcuda.so.1']\n",
        }
    )
    ctx, _, _ = machine(so1=True, so=False)
    ctx = replace(ctx, env={**ctx.env, "PYTHONPATH": site})
    r = one(ctx, "libcuda")
    assert r.status is Status.PASS and "-l:libcuda.so.1" in r.value


def test_on_this_machine(one, make_ctx):
    """The registered check end to end on the real machine: a skip exactly when it has no NVIDIA
    driver at all (no nvidiactl, ldconfig lists no libcuda.so.1), otherwise a verdict on it."""
    ctx = make_ctx()
    r = one(ctx, "libcuda")
    listed = [ln for ln in (ldconfig_text(ctx.ldconfig) or "").splitlines() if "libcuda.so.1" in ln and "=>" in ln]
    if not ctx.nvidia_ctl.exists() and not listed:
        assert r.status is Status.SKIP and f"no NVIDIA driver on this machine (no {ctx.nvidia_ctl}" in r.value
    else:
        assert r.status in (Status.PASS, Status.FAIL) and "libcuda" in r.value
