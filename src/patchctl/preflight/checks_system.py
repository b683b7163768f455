"""Checks of the process environment: Python, variables, limits, /dev/shm, the Triton cache."""

from __future__ import annotations

import math
import os
import resource
import tempfile
from collections.abc import Mapping
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from patchctl.preflight.base import Check
from patchctl.preflight.model import Context, Status, Verdict
from patchctl.preflight.probe import Probe, ProbeResult

PYTHON = Probe(
    "python",
    "import json, platform, sys\nprint('@@patchctl-probe@@ ' + json.dumps("
    "{'version': platform.python_version(), 'executable': sys.executable}))",
    inline=True,
)
#: verl >= 0.6 needs 3.10 (match statements, PEP 604 unions at run time)
MIN_PYTHON = "3.10"
#: the record's values (environment-variable table of the modification record)
RAY_VARS = {"RAY_num_prestart_python_workers": 1, "RAY_worker_register_timeout_seconds": 600}
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
OPEN_FILES_WANTED = 65536


class PythonCheck(Check):
    name, title, probes = "python", "Python", (PYTHON,)

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        found = data["python"].data
        version = found["version"]
        spec = ctx.requirements.get("python") or f">={MIN_PYTHON}"
        value = f"Python {version} ({found['executable']})"
        try:
            ok = SpecifierSet(spec).contains(version, prereleases=True)
        except InvalidSpecifier:
            ok = True
        if ok:
            return Verdict(Status.PASS, value)
        whose = ctx.requirements_source or "verl >= 0.6"
        return Verdict(
            Status.FAIL,
            f"{value}; {whose} requires Python {spec}",
            f"use a Python {spec} environment (e.g. python3.10 -m venv .venv)",
        )


class ThreadsCheck(Check):
    name, title = "threads", "Thread variables"

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        shown, unset, bad = [], [], []
        for var in THREAD_VARS:
            raw = ctx.env.get(var)
            if raw is None:
                unset.append(var)
                shown.append(f"{var} unset")
                continue
            shown.append(f"{var}={raw}")
            if not raw.strip().isdigit() or int(raw) < 1:
                bad.append(var)
        value = ", ".join(shown)
        if bad:
            return Verdict(
                Status.FAIL,
                value,
                f"{', '.join(bad)} must be a positive integer: export " + " ".join(f"{v}=1" for v in bad),
            )
        if unset:
            return Verdict(
                Status.WARN,
                value + f" (this machine has {os.cpu_count()} CPUs)",
                "every Ray worker then starts one thread per core, which ends in 'pthread_create "
                "failed' with many workers; export "
                + " ".join(f"{v}=1" for v in unset)
                + " (the uky training scripts do)",
            )
        return Verdict(Status.PASS, value)


class RayEnvCheck(Check):
    name, title = "ray_env", "Ray variables"

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        shown, unset, bad, low = [], [], [], []
        for var, wanted in RAY_VARS.items():
            raw = ctx.env.get(var)
            shown.append(f"{var}={raw}" if raw is not None else f"{var} unset")
            if raw is None:
                unset.append(f"{var}={wanted}")
            elif not raw.strip().isdigit():
                bad.append(var)
            elif var.endswith("timeout_seconds") and int(raw) < wanted:
                low.append(f"{var}={wanted}")
        value = ", ".join(shown)
        if bad:
            return Verdict(
                Status.FAIL,
                value,
                f"Ray refuses to start with a non-integer {', '.join(bad)}; "
                "export " + " ".join(f"{v}={RAY_VARS[v]}" for v in bad),
            )
        if unset or low:
            return Verdict(
                Status.WARN,
                value,
                "slow clusters then fail with 'Failed to register worker'; export "
                + " ".join(unset + low)
                + " (the record's values, set by the uky training scripts)",
            )
        return Verdict(Status.PASS, value)


class CudaVisibleDevicesCheck(Check):
    name, title = "cuda_visible_devices", "CUDA_VISIBLE_DEVICES"

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        raw = ctx.env.get("CUDA_VISIBLE_DEVICES")
        if raw is None:
            return Verdict(Status.PASS, "unset: every GPU is visible")
        tokens = [t.strip() for t in raw.split(",")]
        if raw.strip() == "":
            return Verdict(
                Status.FAIL,
                "set but empty: CUDA sees no GPU",
                "unset CUDA_VISIBLE_DEVICES or list the GPUs to use, e.g. 0,1",
            )
        dupes = sorted({t for t in tokens if tokens.count(t) > 1})
        if dupes:
            return Verdict(
                Status.FAIL,
                f"{raw!r} lists {', '.join(dupes)} more than once",
                "duplicates fail with 'CUDA initialization: Unexpected error from cudaGetDeviceCount()' "
                "or NCCL 'Duplicate GPU detected'; list each GPU once, e.g. " + ",".join(dict.fromkeys(tokens)),
            )
        for i, t in enumerate(tokens):
            valid = t.isdigit() or t.startswith(("GPU-", "MIG-"))
            if not valid:
                return Verdict(
                    Status.WARN,
                    f"{raw!r}: entry {t!r} is not a GPU index or UUID",
                    f"CUDA ignores it and every entry after it ({len(tokens) - i} of {len(tokens)}); "
                    "use indices such as 0,1 or GPU-/MIG- UUIDs from nvidia-smi -L",
                )
        return Verdict(Status.PASS, f"{raw} ({len(tokens)} GPU{'s' if len(tokens) != 1 else ''})")


def _mem_total(meminfo: Path) -> int | None:
    try:
        for line in meminfo.read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


class ShmCheck(Check):
    name, title = "shm", "/dev/shm"  # noqa: S108 - the mount the check looks at, by its name

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        try:
            st = os.statvfs(ctx.shm)
        except OSError as exc:
            return Verdict(
                Status.FAIL,
                f"{ctx.shm}: {exc.strerror}",
                "Ray's object store and NCCL need shared memory; mount a tmpfs there (docker run --shm-size=...)",
            )
        total, free = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
        ram = _mem_total(ctx.meminfo)
        value = f"{ctx.shm}: {_gib(total)}, {_gib(free)} free" + (f", RAM {_gib(ram)}" if ram else "")
        # Ray sizes its object store at 30% of memory and falls back to /tmp when /dev/shm has less free
        wanted = int(ram * 0.3) if ram else 2**30
        if free < wanted:
            size = max(1, math.ceil(wanted / 2**30))
            return Verdict(
                Status.WARN,
                value + f"; Ray's object store wants {_gib(wanted)}",
                "Ray will put its object store in /tmp (slow, 'The object store is using /tmp instead "
                f"of /dev/shm'); start the container with --shm-size={size}g, or "
                f"mount -o remount,size={size}G {ctx.shm}",
            )
        return Verdict(Status.PASS, value)


class OpenFilesCheck(Check):
    name, title = "open_files", "Open-files limit"

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        return judge_open_files(soft, hard)


def judge_open_files(soft: int, hard: int) -> Verdict:
    def fmt(n: int) -> str:
        return "unlimited" if n == resource.RLIM_INFINITY else str(n)

    value = f"soft {fmt(soft)}, hard {fmt(hard)}"
    if soft == resource.RLIM_INFINITY or soft >= OPEN_FILES_WANTED:
        return Verdict(Status.PASS, value)
    if hard == resource.RLIM_INFINITY or hard >= OPEN_FILES_WANTED:
        fix = f"run `ulimit -n {OPEN_FILES_WANTED}` in the launch script (the hard limit allows it)"
    else:
        fix = (
            f"raise the hard limit (nofile {OPEN_FILES_WANTED} in /etc/security/limits.conf, or "
            f"docker run --ulimit nofile={OPEN_FILES_WANTED}:{OPEN_FILES_WANTED}), then ulimit -n {OPEN_FILES_WANTED}"
        )
    status = Status.FAIL if soft < 1024 else Status.WARN
    return Verdict(
        status,
        value + f"; Ray with many workers wants {OPEN_FILES_WANTED}",
        "too few descriptors end in 'Too many open files' from Ray and NCCL; " + fix,
    )


class TritonCacheCheck(Check):
    name, title = "triton_cache", "Triton cache dir"

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        raw = ctx.env.get("TRITON_CACHE_DIR")
        home = ctx.env.get("TRITON_HOME") or ctx.env.get("HOME") or str(Path.home())
        path = Path(raw) if raw else Path(home) / ".triton" / "cache"
        origin = "TRITON_CACHE_DIR" if raw else "Triton's default"
        fix = "export TRITON_CACHE_DIR=/tmp/triton_cache (the uky scripts' value) or make it writable"
        if path.exists() and not path.is_dir():
            return Verdict(Status.FAIL, f"{path} ({origin}) exists but is not a directory", fix)
        if path.is_dir():
            try:
                with tempfile.NamedTemporaryFile(dir=path, prefix=".patchctl-"):
                    pass
            except OSError as exc:
                return Verdict(Status.FAIL, f"{path} ({origin}) is not writable: {exc.strerror}", fix)
            return Verdict(Status.PASS, f"{path} ({origin}), writable")
        parent = next((p for p in path.parents if p.exists()), Path("/"))
        if parent.is_dir() and os.access(parent, os.W_OK | os.X_OK):
            return Verdict(Status.PASS, f"{path} ({origin}), will be created under {parent}")
        return Verdict(Status.FAIL, f"{path} ({origin}) does not exist and {parent} is not writable", fix)
