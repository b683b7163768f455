"""``validate``: the steps in order, each a function of the one before it, and the verdict.

plan -> connect -> preflight (ship + checks) -> ray_up (with the proofs that strangers are kept
out) -> launch -> watch -> census -> teardown -> fetch.
Whatever ends the run — a failed check, a host lost, the trainer dying, a stranger in the
cluster, Ctrl-C at any step — the run's own Ray processes are stopped on every host before the
result is returned, and the result names the host and the cause in one line.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path, PurePosixPath
from typing import Any

from patchctl import fsutil, orphans
from patchctl.clusters import Cluster
from patchctl.errors import PatchctlError
from patchctl.remote import ssh
from patchctl.train.gates import GateStatus
from patchctl.train.logparse import Progress
from patchctl.validate import baseline as baselines
from patchctl.validate import codehosts, fetch, guard, hostdumps, launch, preflight, rayup, remote
from patchctl.validate import compare as comparing
from patchctl.validate import plan as planning
from patchctl.validate.checks import runner as health
from patchctl.validate.errors import HostLost, Interrupted, TrainerFailed, ValidateFailed
from patchctl.validate.model import Note, Trained, ValidateResult, Verdict
from patchctl.validate.teardown import Interrupts, Started, no_interrupts

NoteFn = Callable[[Note], None]
ProgressFn = Callable[[Progress], None]


class _Checked(Exception):
    """--profile health: the checks were the run; no Ray, no training."""


def trainer_command(plan: planning.Plan, version: str | None = None) -> tuple[str, ...]:
    """The trainer's argv as the head will run it: the same plan the head makes (host/train.py),
    with the head's verl ``version`` (its adaptations: verl >= 0.9's engine options) and the paths
    of the patchctl package shipped there (the smoke reward file), sized from the config (Ray's
    count at run time)."""
    from patchctl.target import Target
    from patchctl.train import run as train_run
    from patchctl.train.profiles import load_profile
    from patchctl.validate.host.train import in_run_dir

    head = plan.head
    gpus: int | str = head.host.gpus if head.host.gpus is not None else "GPUS_COUNTED_BY_PREFLIGHT"
    view = Cluster(
        plan.cluster.name,
        (),
        head.host.root,
        plan.cluster.source,
        paths=dict(plan.cluster.paths),
        env={"RAY_ADDRESS": f"{head.host.address or 'HEAD_ADDRESS'}:{head.host.ray_port}"},
    )
    tree = Target(Path(head.host.root), version, head.label, None, False)
    overrides = planning.trainer_overrides(plan.options, len(plan.nodes), gpus)
    p = in_run_dir(
        train_run.plan(
            tree, load_profile(plan.options.profile), view, overrides, plan.cluster.python, Path(plan.remote_run_dir)
        )
    )
    here, there = str(planning.package_dir()), str(PurePosixPath(head.host.root) / remote.PKG_DIR / "patchctl")
    return tuple(a.replace(here, there) for a in p.launch.argv)


def head_version(cluster: Cluster, plan: planning.Plan) -> str | None:
    """The head's verl version, read over one ssh (``cat``, nothing written); None when it cannot be."""
    from patchctl import proc

    argv = ssh.ssh_argv(cluster, plan.head.host, ["cat", f"{plan.head.host.root}/verl/version/version"])
    try:
        done = proc.run(argv, check=False, timeout=cluster.timeout)
    except (OSError, PatchctlError, subprocess.TimeoutExpired):
        return None
    text = done.stdout.strip() if done.returncode == 0 and isinstance(done.stdout, str) else ""
    return text if text and len(text) < 64 and text.isprintable() else None


def dry_run(cluster: Cluster, options: planning.Options) -> ValidateResult:
    plan = planning.make(cluster, options)
    version = head_version(cluster, plan) if options.trains else None
    return ValidateResult(
        cluster.name,
        options.profile,
        Verdict.PLANNED,
        run_id=plan.run_id,
        run_dir=str(plan.run_dir),
        commands=planning.commands(plan),
        trainer_command=trainer_command(plan, version) if options.trains else (),
        insecure_ray=options.insecure_ray,
    )


def validate(
    cluster: Cluster,
    options: planning.Options,
    note: NoteFn,
    progress: ProgressFn,
    compare_with: Path | None = None,
    baseline_from: Path | None = None,
) -> ValidateResult:
    plan = planning.make(cluster, options)
    refs = baselines.references(baseline_from) if baseline_from is not None else None  # unreadable: stop now
    old_stack = None
    if compare_with is not None:  # an unreadable report stops the run before it starts
        if options.trains:
            comparing.load(compare_with)
        old_stack = health.earlier_stack(compare_with, required=not options.trains)
    t0 = time.monotonic()
    marks: dict[str, float] = {}
    stage = "preflight"
    out: dict[str, Any] = {}
    failure: ValidateFailed | None = None
    if options.insecure_ray:
        note(
            Note(
                "preflight",
                "validate",
                "--insecure-ray: the cluster is NOT required to refuse callers without "
                "its token; anyone who reaches the hosts' Ray ports may run code as you",
            )
        )
    with Interrupts() as interrupts, ssh.Connections(cluster) as conns, orphans.scratch("pcv-stage-") as stage_dir:
        started = Started(plan, conns, interrupts)
        try:
            out["preflight"] = preflight.run(plan, conns.masters, planning.stage_package(Path(stage_dir)), note)
            marks["preflight"] = time.monotonic()
            stage = "checks"
            out["health"] = health.run(plan, conns.masters, out["preflight"], note, old_stack)
            marks["checks"] = time.monotonic()
            interrupts.check()
            if not options.trains:
                raise _Checked
            stage = "ray-up"
            out["ray"] = rayup.run(plan, started, out["preflight"], note)
            marks["ray_up"] = time.monotonic()
            interrupts.check()
            stage = "training"
            session = launch.launch(plan, started, out["ray"])
            first: list[float] = []

            def seen(p: Progress) -> None:
                if not first:
                    first.append(time.monotonic())
                marks["last_step"] = time.monotonic()
                progress(p)

            def hung() -> None:
                for host, notes in hostdumps.capture(plan, conns.masters).items():
                    for line in notes:
                        note(Note("watch", host, line))

            out["trained"] = launch.watch(plan, session, note, seen, hung)
            marks["trainer_done"] = time.monotonic()
            if first:
                marks["first_step"] = first[0]
            interrupts.check()
            guard.census(plan, started, out["ray"])
        except _Checked:
            stage = "done"
        except ValidateFailed as exc:
            failure = exc
            out.setdefault("preflight", getattr(exc, "preflight", ()))
            out.setdefault("health", getattr(exc, "health", None))
        except KeyboardInterrupt:
            failure = Interrupted(stage)
        interrupts.quiet()  # from here a Ctrl-C is only recorded: teardown must run
        if interrupts.seen and not isinstance(failure, Interrupted):
            failure = Interrupted(stage)  # what failed after a Ctrl-C failed because of it
        with no_interrupts():
            marks["teardown_start"] = time.monotonic()
            out["teardown"] = started.teardown(note)
            if out["teardown"]:
                marks["teardown"] = time.monotonic()
            lost = next((t for t in out["teardown"] if t.label == plan.head.label and t.status == "unreachable"), None)
            trained = out.get("trained")
            if lost is not None and stage == "training" and not isinstance(failure, (HostLost, Interrupted)):
                # the head went while the trainer ran: its answer (if any) came from a dying cluster
                failure, trained = HostLost(plan.head.label, "training", "head", lost.reason.split(";")[0]), None
            if trained is not None:
                try:
                    out["fetched"] = fetch.run(plan, trained, conns.masters[0])
                except ValidateFailed as exc:
                    failure = failure or exc
                trained = out["trained"] = _every_host(plan, conns.masters, trained)
                marks["fetch"] = time.monotonic()
                if not trained.passed and failure is None:
                    failure = TrainerFailed(codehosts.blamed(plan, trained), launch.summary(trained))
    result = ValidateResult(
        cluster.name,
        options.profile,
        Verdict.PASS
        if failure is None
        else (Verdict.INTERRUPTED if isinstance(failure, Interrupted) else Verdict.FAIL),
        str(failure) if failure else "",
        failure.host if failure else "",
        (failure.stage or stage) if failure else "done",
        plan.run_id,
        str(plan.run_dir),
        planning.commands(plan),
        tuple(out["trained"].command) if out.get("trained") else (),
        tuple(out.get("preflight", ())),
        out.get("ray"),
        out.get("trained"),
        tuple(out.get("fetched", ())),
        tuple(out.get("teardown", ())),
        _timings(t0, marks),
        insecure_ray=options.insecure_ray,
        health=out.get("health"),
    )
    # a run that ended before fetch (health alone, a failed preflight or Ray start) still leaves its
    # folder with validate.json, as the README says
    plan.run_dir.mkdir(parents=True, exist_ok=True)
    _write(plan.run_dir, result)
    if compare_with is not None and (plan.run_dir / "report.json").is_file():
        result = replace(result, comparison=_compare(plan.run_dir, compare_with))  # reads the validate.json
        _write(plan.run_dir, result)
    if refs is not None and (plan.run_dir / "report.json").is_file():
        verdict = baselines.judge(comparing.load(plan.run_dir), refs)
        note(Note("baseline", plan.head.label, verdict.line()))
        result = replace(result, baseline=verdict.to_json())
        if verdict.verdict == "differs" and result.verdict is Verdict.PASS:
            result = replace(result, verdict=Verdict.FAIL, cause=f"baseline {verdict.line()}", stage="baseline")
        _write(plan.run_dir, result)
    return result


def _every_host(plan: planning.Plan, masters: list[ssh.Master], trained: Trained) -> Trained:
    """``patched-code-ran`` and ``weights-match`` judged over every host's records (codehosts.py),
    in place of the head's judgement of its own; the fetched report.json gets them and the
    processes per host."""
    hosts = codehosts.collect(plan, masters)
    new = (codehosts.gate(hosts), codehosts.weights_gate(hosts))
    passed = codehosts.apply(plan.run_dir, hosts, *new)
    names = {g.name for g in new}
    gates = tuple(x for x in trained.gates if x.get("name") not in names) + tuple(
        {**asdict(g), "status": g.status.value} for g in new
    )
    # the head's verdict was its gates'; with two of them now judged over every host, it is recomputed
    ok = all(x.get("status") != GateStatus.FAIL.value for x in gates)
    return replace(trained, gates=gates, passed=ok and passed)


def _write(run_dir: Path, result: ValidateResult) -> None:
    """``validate.json`` beside the fetched report: the whole result (nodes, GPUs, timings).

    Through :func:`fsutil.write_into`: a link already in ``--out`` under that name is replaced,
    not written through (issue 41).
    """
    if run_dir.is_dir():
        text = json.dumps(result.to_json(), indent=2, default=str) + "\n"
        fsutil.write_into(run_dir, "validate.json", text.encode("utf-8"))


def _compare(run_dir: Path, other: Path) -> dict[str, Any]:
    return compare_reports(run_dir / "report.json", other, run_dir)


def _timings(t0: float, m: dict[str, float]) -> dict[str, float | None]:
    def span(a: str | float, b: str) -> float | None:
        start = t0 if a == "start" else m.get(str(a))
        return round(m[b] - start, 2) if start is not None and b in m else None

    return {
        "preflight": span("start", "preflight"),
        "checks": span("preflight", "checks"),
        "ray_up": span("checks", "ray_up"),
        "startup": span("ray_up", "first_step"),
        "steps": span("first_step", "last_step"),
        "trainer_exit": span("last_step", "trainer_done"),
        "teardown": span("teardown_start", "teardown"),
        "fetch": span("teardown", "fetch") if "teardown" in m else span("teardown_start", "fetch"),
        "total": round(time.monotonic() - t0, 2),
    }


def compare_reports(new: Path, old: Path, out_dir: Path) -> dict[str, Any]:
    """``--compare`` of two existing reports, no cluster involved (the plot goes to ``out_dir``)."""
    a, b = comparing.load(new), comparing.load(old)
    doc = comparing.compare(a, b)
    png = comparing.plot(a, b, out_dir / "compare.png")
    doc["plot"] = str(png) if png else None
    return doc
