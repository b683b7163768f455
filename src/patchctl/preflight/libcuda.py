"""Whether ``libcuda.so`` resolves for the linker the way Triton looks for it (the record's
``cannot find -lcuda``).

Triton builds a small C module at first use and links it against the driver. It finds the
driver's directory with ``TRITON_LIBCUDA_PATH`` if set, else the ``libcuda.so.1`` entries of
``/sbin/ldconfig -p``, else the ``LD_LIBRARY_PATH`` directories that hold ``libcuda.so.1``; it
then passes them as ``-L`` and links ``-lcuda``, which needs the unversioned ``libcuda.so`` in
one of those directories, ``LIBRARY_PATH`` or the linker's defaults. Recent Triton releases link
``-l:libcuda.so.1`` instead and need only the versioned file; the probe reads which one the
installed Triton does from its source, without importing it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from patchctl import proc
from patchctl.errors import PatchctlError
from patchctl.preflight.base import Check
from patchctl.preflight.model import Context, Status, Verdict
from patchctl.preflight.probe import Probe, ProbeResult

_TRITON_SCRIPT = r"""
import importlib.metadata, importlib.util, json, os
out = {"installed": False}
spec = importlib.util.find_spec("triton")
if spec is not None and spec.origin:
    root = os.path.dirname(spec.origin)
    out = {"installed": True, "version": None, "links": "cuda"}
    try:
        out["version"] = importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        pass
    for rel in ("backends/nvidia/driver.py", "common/build.py", "runtime/build.py"):
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                text = f.read()
        except OSError:
            continue
        if "libraries = ['libcuda.so.1']" in text or 'libraries = ["libcuda.so.1"]' in text:
            out["links"] = "libcuda.so.1"
        break
print("@@patchctl-probe@@ " + json.dumps(out))
"""
TRITON = Probe("triton", _TRITON_SCRIPT, inline=True)


def ldconfig_text(ldconfig: str) -> str | None:
    """``ldconfig -p`` output, or None when the program is missing (Triton then crashes)."""
    if not Path(ldconfig).exists():
        return None
    try:
        return proc.run([ldconfig, "-p"], check=False, timeout=20).stdout
    except (PatchctlError, OSError):
        return None


def triton_dirs(ldconfig_out: str | None, env: Mapping[str, str]) -> tuple[list[str], str, list[str]]:
    """Triton's ``libcuda_dirs()``: (directories, where they came from, ldconfig's libcuda.so.1 paths)."""
    if env.get("TRITON_LIBCUDA_PATH"):
        return [env["TRITON_LIBCUDA_PATH"]], "TRITON_LIBCUDA_PATH", []
    locs = [ln.split()[-1] for ln in (ldconfig_out or "").splitlines() if "libcuda.so.1" in ln and "=>" in ln]
    if locs:
        return sorted({os.path.dirname(p) for p in locs}), "ldconfig", locs
    ld_path = [d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d]
    found = [d for d in ld_path if os.path.exists(os.path.join(d, "libcuda.so.1"))]
    return found, "LD_LIBRARY_PATH", []


def judge_libcuda(ctx: Context, ldconfig_out: str | None, links: str, triton: str) -> Verdict:
    env = ctx.env
    stubs = ctx.cuda_home / "lib64" / "stubs"
    stub_fix = (
        (
            f"export TRITON_LIBCUDA_PATH={stubs} (Triton then links the stub and the driver's libcuda.so.1 "
            "is loaded at run time)"
        )
        if (stubs / "libcuda.so").exists()
        else ""
    )
    if ldconfig_out is None and not env.get("TRITON_LIBCUDA_PATH"):
        return Verdict(
            Status.FAIL,
            f"{ctx.ldconfig} is missing; Triton runs it to find libcuda.so.1 ({triton})",
            stub_fix or "export TRITON_LIBCUDA_PATH=<the directory holding libcuda.so>",
        )
    dirs, source, locs = triton_dirs(ldconfig_out, env)
    dirs_with_so1 = [d for d in dirs if os.path.exists(os.path.join(d, "libcuda.so.1"))]
    if source != "TRITON_LIBCUDA_PATH" and not dirs_with_so1:
        if not locs and not ctx.nvidia_ctl.exists():
            return Verdict(
                Status.SKIP,
                f"no NVIDIA driver on this machine (no {ctx.nvidia_ctl}, no libcuda.so.1 "
                f"in ldconfig or LD_LIBRARY_PATH); {triton}",
            )
        where = (
            f"ldconfig lists {', '.join(locs)} but the file is gone"
            if locs
            else "neither ldconfig nor any LD_LIBRARY_PATH directory has libcuda.so.1"
        )
        fixes = ["run ldconfig as root so its cache lists the driver's libcuda.so.1"] + ([stub_fix] if stub_fix else [])
        return Verdict(
            Status.FAIL, f"Triton stops with 'libcuda.so cannot found!': {where} ({triton})", "; or ".join(fixes)
        )
    if links == "libcuda.so.1" and dirs_with_so1:
        return Verdict(
            Status.PASS, f"libcuda.so.1 in {', '.join(dirs_with_so1)} (via {source}); {triton} links -l:libcuda.so.1"
        )
    search = dirs + [d for d in env.get("LIBRARY_PATH", "").split(":") if d] + list(ctx.system_lib_dirs)
    hit = next((d for d in search if os.path.exists(os.path.join(d, "libcuda.so"))), None)
    if hit:
        return Verdict(
            Status.PASS, f"driver dirs {', '.join(dirs)} (via {source}); -lcuda links with {hit}/libcuda.so ({triton})"
        )
    first = (dirs_with_so1 or dirs)[0]
    fixes = ([stub_fix] if stub_fix else []) + [f"ln -s {first}/libcuda.so.1 {first}/libcuda.so (as root)"]
    if source == "ldconfig":
        fixes.append(
            f"putting {stubs} on LD_LIBRARY_PATH (the uky patch triton-cuda-stubs) does not help here: "
            "Triton reads LD_LIBRARY_PATH only when ldconfig lists no libcuda.so.1"
        )
    return Verdict(
        Status.FAIL,
        f"Triton's build will fail with 'cannot find -lcuda': libcuda.so.1 is in {first} "
        f"(via {source}) but no libcuda.so is there, on LIBRARY_PATH or in the linker's default "
        f"directories ({triton})",
        "; or ".join(fixes),
    )


class LibcudaCheck(Check):
    name, title, probes = "libcuda", "libcuda for Triton", (TRITON,)

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        t = data["triton"].data
        if t.get("installed"):
            triton = f"Triton {t.get('version') or '?'}"
            links = t.get("links", "cuda")
        else:
            triton, links = "Triton not installed yet (vLLM and torch bring it)", "cuda"
        return judge_libcuda(ctx, ldconfig_text(ctx.ldconfig), links, triton)
