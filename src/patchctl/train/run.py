"""``patchctl train``: plan a verl run from a profile, launch it, watch it, judge it, report it.

:func:`plan` is pure (what ``--dry-run`` shows); :func:`train` builds the smoke assets when the
profile needs them, runs the trainer, evaluates the gates and writes ``report.json`` and
``report.png`` next to ``train.log`` in the run directory.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from patchctl.clusters import Cluster
from patchctl.errors import PatchctlError
from patchctl.target import Target
from patchctl.train import assets, facts, gates as gates_mod, launcher, rayhead, report, settings, smoke, treeconfig
from patchctl.train.data import TINY_NAME
from patchctl.train.gates import Gate
from patchctl.train.launcher import Launch
from patchctl.train.logparse import LOSS_KEYS, REWARD_KEYS, LogScan, Step, pick
from patchctl.train.profiles import Adapt, Profile, adapt, fill, resolve_values
from patchctl.train.report import Timings


@dataclass(frozen=True)
class Plan:
    profile: Profile
    run_dir: Path
    launch: Launch
    #: placeholder values the command was filled from
    values: dict[str, str]
    #: the Ray head node patchctl starts beside the trainer, if the profile asks for one
    head: rayhead.HeadSpec | None = None
    #: the profile's [[adapt]] tables that matched the target's verl version (already applied)
    adapted: tuple[Adapt, ...] = ()
    #: where each path setting came from (cluster, environment, git_ignore.py, patchctl)
    sources: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Progress:
    """What the live progress line shows after each logged step."""

    step: int
    total: int | None
    reward: float | None
    loss: float | None
    seconds_per_step: float | None
    elapsed: float


@dataclass(frozen=True)
class TrainResult:
    passed: bool
    run_dir: Path
    log: Path
    report: Path
    plot: Path | None
    gates: tuple[Gate, ...]
    timings: Timings
    returncode: int | None
    #: the report as written
    document: dict[str, Any]


def default_run_dir(target: Target, profile: str) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return target.root / ".patchctl" / "runs" / f"{profile}-{stamp}"


def plan(target: Target, profile: Profile, cluster: Cluster | None, overrides: list[str] | tuple[str, ...],
         python: str, run_dir: Path | None = None) -> Plan:
    """Fill the profile into an exact command; nothing is written."""
    profile, adapted = adapt(profile, target.version)
    run_dir = (run_dir or default_run_dir(target, profile.name)).resolve()
    # the smoke profile's model and data are patchctl's own, whatever the cluster or git_ignore.py say
    own = smoke.paths(run_dir / "assets") if profile.assets == "smoke" else {}
    found = settings.resolve([n for n in settings.wanted(profile, cluster) if n not in own], target.root, cluster)
    given = {"RUN_DIR": str(run_dir), **{k: s.value for k, s in found.items()}, **own}
    sources = {**{k: s.source for k, s in found.items()}, **{k: "patchctl's smoke assets" for k in own}}
    values = resolve_values(profile, given)
    extra_env = dict(cluster.env) if cluster is not None else {}
    head = None
    if profile.ray_head_cpus and not os.environ.get("RAY_ADDRESS") and "RAY_ADDRESS" not in extra_env:
        head = rayhead.spec(python, profile.ray_head_cpus, run_dir / "ray-head.log")
        extra_env["RAY_ADDRESS"] = head.address
        # a driver that connects to a running cluster must not ask for CPUs of its own
        overrides = ["ray_kwargs.ray_init.num_cpus=null", *overrides]
    launch = launcher.build(target.root, profile, values, overrides, python, run_dir / "train.log", extra_env)
    treeconfig.check(target.root, target.version, launch.argv[1 + len(launcher.ENTRY):])
    return Plan(profile, run_dir, launch, values, head, adapted, sources)


def _prepare(p: Plan) -> None:
    """What must exist before the launch (the smoke assets are built while the trainer starts)."""
    for step in p.profile.prepare:
        if step == "tiny-dataset":
            data_dir = Path(p.values["DATA_DIR"])
            if not (data_dir / TINY_NAME).is_file():
                assets.build("tiny-dataset", data_dir, p.launch.argv[0], _trainer_env(p))
    for raw in p.profile.requires:
        path = Path(fill(raw, p.values, f"profile {p.profile.name}, requires"))
        if not path.exists():
            used = [f"{k} from {p.sources[k]}" for k in p.sources if "{" + k + "}" in raw]
            where = f"check {', '.join(used)}" if used else "check MODEL_PATH/DATA_DIR"
            raise PatchctlError(f"{path}: not found (profile {p.profile.name} needs it); {where}, or create it")


def settings_document(p: Plan) -> dict[str, dict[str, str]]:
    """Each path setting the run used, with where it came from (for --dry-run --json and the report)."""
    return {k: {"value": p.values[k], "source": src} for k, src in p.sources.items() if k in p.values}


def _trainer_env(p: Plan) -> dict[str, str]:
    """The environment the trainer gets, so its interpreter builds the assets as it would run."""
    return {**os.environ, **p.launch.env}


def _doctor(log: Path) -> list[dict[str, Any]] | None:
    """Known failure signatures in the log (``patchctl doctor``), or None where doctor is absent."""
    try:
        doctor = importlib.import_module("patchctl.doctor")
    except ImportError:
        return None
    try:
        with doctor.open_log(log) as reader:
            found = doctor.diagnose(reader, doctor.load_signatures(None), str(log))
    except (PatchctlError, OSError) as exc:
        return [{"error": str(exc)}]
    return [{"id": m.signature.id, "title": m.signature.title, "line": m.first_line, "excerpt": m.excerpt,
             "cause": m.signature.cause, "fix": m.signature.fix} for m in found.matches]


def _gather(p: Plan, out: dict[str, Any]) -> None:
    out["versions"] = facts.package_versions(p.launch.argv[0], _trainer_env(p))
    out["gpus"] = facts.gpus()
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401  (warm the import the plot needs)
    except ImportError:
        pass


def train(p: Plan, target: Target, t0: float, *, timeout: float | None = None,
          on_progress: Callable[[Progress], None] | None = None,
          on_line: Callable[[str, float], None] | None = None) -> TrainResult:
    """Run the plan; ``t0`` is the ``time.monotonic()`` that counts as the launch."""
    p.run_dir.mkdir(parents=True, exist_ok=True)
    _prepare(p)
    scan = LogScan()
    ready: list[float] = []

    def build_assets() -> None:
        # verl reads the model and data only in its TaskRunner, seconds after the launch
        if p.profile.assets == "smoke":
            assets.build("smoke", p.run_dir / "assets", p.launch.argv[0], _trainer_env(p))
        ready.append(time.monotonic() - t0)

    def seen(line: str, at: float) -> None:
        step = scan.feed(line, at)
        if on_line:
            on_line(line, at)
        if step is not None and on_progress:
            on_progress(_progress(step, scan, at))

    # facts about the machine and the matplotlib import are gathered while the trainer runs
    side: dict[str, Any] = {}
    helper = threading.Thread(target=_gather, args=(p, side), name="train-facts", daemon=True)
    helper.start()
    head = rayhead.Head(p.head, p.launch.env, p.launch.cwd) if p.head else None
    try:
        started = time.monotonic() - t0
        done = launcher.execute(p.launch, t0, seen, timeout, build_assets)
    finally:
        stopper = threading.Thread(target=head.stop, name="ray-head-stop") if head else None
        if stopper:
            stopper.start()
    first = scan.steps[0].at if scan.steps else None
    results = gates_mod.evaluate(done.returncode, scan, p.profile.gates, first)
    passed = gates_mod.verdict(results)
    doctor = None if passed else _doctor(p.launch.log)
    helper.join(timeout=60)
    versions, gpus, tree = side.get("versions", {}), side.get("gpus", []), facts.tree(target)
    timings = report.Timings(ready[0] if ready else None, started, scan.moments.get("ray_start"), scan.moments.get("task_runner"),
                             scan.moments.get("workers_ready"), first, scan.steps[-1].at if scan.steps else None,
                             done.ended_at, None)
    run = {"profile": p.profile.name, "rollout": p.profile.rollout, "command": list(p.launch.argv),
           "ray_head": {"command": list(p.head.argv), "log": str(p.head.log)} if p.head else None,
           "cwd": str(p.launch.cwd), "env": p.launch.env, "returncode": done.returncode,
           "timed_out": done.timed_out, "log": str(p.launch.log),
           "adapted": [asdict(a) for a in p.adapted], "settings": settings_document(p)}
    plot_path = report.plot(p.run_dir / "report.png", scan, f"patchctl train --profile {p.profile.name} "
                            f"(verl {target.version or '?'})")
    run["plot"] = str(plot_path) if plot_path else "none (no steps logged, or matplotlib is not installed)"
    timings = report.Timings(**{**asdict(timings), "verdict": round(time.monotonic() - t0, 2)})
    doc = report.document(run=run, tree=tree, versions=versions, gpus=gpus, timings=timings,
                          scan=scan, gates=results, passed=passed, doctor=doctor)
    path = report.write_json(p.run_dir / "report.json", doc)
    if stopper:
        stopper.join()
    return TrainResult(passed, p.run_dir, p.launch.log, path, plot_path, tuple(results), timings, done.returncode, doc)


def _progress(step: Step, scan: LogScan, at: float) -> Progress:
    first = scan.steps[0]
    per = (at - first.at) / (len(scan.steps) - 1) if len(scan.steps) > 1 and first.at is not None else None
    return Progress(step.step, scan.total_steps, pick(step.metrics, REWARD_KEYS), pick(step.metrics, LOSS_KEYS),
                    per, at)
