"""Checks of the training stack: Ray starts and runs a task; the verl that imports is the target
tree; the target carries its patches."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from patchctl.errors import PatchctlError
from patchctl.patchsets import record as rec
from patchctl.patchsets.loader import load_patchsets
from patchctl.patchsets.model import Presence
from patchctl.preflight.base import Check, not_installed
from patchctl.preflight.model import Context, Status, Verdict
from patchctl.preflight.probe import Probe, ProbeResult

#: seconds the probe's one Ray task may wait for a worker to register
TASK_TIMEOUT = 30
RAY = Probe(
    "ray",
    "ray_info.py",
    args=lambda ctx: {"num_cpus": ctx.ray_num_cpus, "task_timeout": min(TASK_TIMEOUT, ctx.timeout)},
)
VERL = Probe("verl", "verl_info.py", cwd=lambda ctx: ctx.target.root if ctx.target else None)
NUM_CPUS_FIX = (
    "set ray_kwargs.ray_init.num_cpus=<N> (verl >= 0.6; ray_init.num_cpus before) to the CPUs "
    "the job may use, and export RAY_worker_register_timeout_seconds=600"
)

STALE_ADDRESS_FIX = (
    "if no Ray cluster should be running, `ray stop` (it removes {path}) or delete that file; to "
    "use the cluster at {address}, export RAY_ADDRESS={address} and set "
    "ray_kwargs.ray_init.num_cpus=null (ray_init.num_cpus before verl 0.6)"
)


class RayCheck(Check):
    name, title, probes = "ray", "Ray", (RAY,)

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        r = data["ray"].data
        install = f"pip install 'ray[default]{ctx.requirements.get('ray', '')}'"
        if not r.get("installed"):
            return not_installed("Ray", ctx, "verl's trainer cannot start (its workers are Ray actors)", install)
        if "version" not in r:
            return Verdict(Status.FAIL, f"Ray does not import: {r.get('error')}", f"reinstall it: {install}")
        head = f"ray {r['version']}"
        if r.get("stage") == "init" and r.get("address_file"):
            f = r["address_file"]
            return Verdict(
                Status.FAIL,
                f"{head}: ray.init ({r['mode']}) failed: {r['error']}; {f['path']} names "
                f"{f['address']} (written by an earlier `ray start`), so a bare ray.init() joins that "
                "cluster instead of starting one, as verl's does",
                STALE_ADDRESS_FIX.format(**f),
            )
        if r.get("stage") == "init":
            return Verdict(Status.FAIL, f"{head}: ray.init ({r['mode']}) failed: {r['error']}", NUM_CPUS_FIX)
        if r.get("stage") == "task":
            return Verdict(
                Status.FAIL,
                f"{head}: started, but a task did not run: {r['error']}",
                "a worker could not register with the raylet; " + NUM_CPUS_FIX,
            )
        value = (
            f"{head}: {r['mode']}, up in {r['init_seconds']}s, {r['cpus']:g} CPUs / {r['gpus']:g} GPUs, "
            f"a task ran in {r['task_seconds']}s"
        )
        spec = ctx.requirements.get("ray")
        try:
            outside = not SpecifierSet(spec).contains(r["version"], prereleases=True) if spec else False
        except InvalidSpecifier:
            outside = False
        if outside:
            return Verdict(Status.WARN, f"{value}; outside the target's range {spec}", install)
        return Verdict(Status.PASS, value)


class VerlCheck(Check):
    name, title, probes = "verl", "verl import", (VERL,)

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        v = data["verl"].data
        expected = Path(os.path.realpath(ctx.target.root / "verl")) if ctx.target else None
        install = f"pip uninstall verl; pip install -e {expected.parent}" if expected else ""
        if not v.get("installed"):
            fix = install or "pass --target with the verl tree, or pip install -e <verl tree>"
            return Verdict(Status.FAIL, f"verl is not importable from {v['cwd']}", fix)
        location = Path(v["location"])
        if "error" in v:
            missing = v.get("missing")
            fix = (
                f"install the missing package {missing!r} (verl's dependencies: pip install -e "
                f"{expected.parent if expected else location.parent})"
                if missing
                else "fix the import error"
            )
            return Verdict(Status.FAIL, f"verl at {location} does not import: {v['error']}", fix)
        head = f"verl {v.get('version', '?')} from {location}"
        if expected is None:
            return Verdict(Status.PASS, f"{head} (no --target: not compared)")
        if location != expected:
            return Verdict(
                Status.FAIL, f"{head}, not from the target {expected}", f"another copy shadows the target: {install}"
            )
        elsewhere = v.get("elsewhere")
        if elsewhere and Path(elsewhere) != expected:
            return Verdict(
                Status.WARN,
                f"{head} (the target) when launched from its root, but {elsewhere} everywhere else",
                "processes started elsewhere (Ray workers with another working "
                f"directory, scripts) import that copy, without the patches: {install}",
            )
        where = "everywhere" if elsewhere else f"when launched from {expected.parent} (not installed)"
        return Verdict(Status.PASS, f"{head} (the target), {where}")


class PatchesCheck(Check):
    name, title = "patches", "Target's patches"

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        from patchctl.verify.patches import verify  # libcst is heavy; only this check needs it

        if ctx.target is None:
            return Verdict(Status.SKIP, "no --target: patches not checked")
        root = ctx.target.root
        try:
            record = rec.load(root)
            specs = ctx.patchsets or tuple(
                name if meta.get("source") == "builtin" else meta.get("source", name)
                for name, meta in (record.patchsets.items() if record else ())
            )
            report = verify(ctx.target, load_patchsets(specs))
        except PatchctlError as exc:
            return Verdict(Status.FAIL, f"cannot verify the patches of {root}: {exc}", "fix the error, then rerun")
        counts: dict[str, int] = {}
        for c in report.checks:
            counts[c.status.value] = counts.get(c.status.value, 0) + 1
        sets = ", ".join(sorted({c.patchset for c in report.checks}))
        value = f"{sets}: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        value += f" (applied {record.entries[0].applied_at})" if record and record.entries else " (no apply record)"
        bad = [c for c in report.checks if not (isinstance(c.status, Presence) and c.status.passes)]
        if bad:
            listed = ", ".join(f"{c.patch} {c.status.value}" for c in bad)
            how = (
                "patchctl verify shows how they differ"
                if any(c.status is Presence.MODIFIED for c in bad)
                else f"patchctl apply --target {root}"
            )
            return Verdict(Status.FAIL, f"{value}; not carried: {listed}", how)
        return Verdict(Status.PASS, value)
