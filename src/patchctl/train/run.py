"""``patchctl train``: plan a verl run from a profile, then launch → judge → report.

:func:`plan` is pure (what ``--dry-run`` shows). :func:`train` runs the plan as three steps, each a
function from frozen values to a frozen value (:mod:`.model`): :func:`launch` runs the trainer
(building the smoke assets while it starts) and reads its log into a :class:`Ran`;
:func:`.judge.judge` applies the profile's gates (and ``doctor`` on a failure); :func:`.report.write`
writes ``report.json`` and ``report.png`` next to ``train.log`` in the run directory and returns
the :class:`~.report.TrainReport`.
"""

from __future__ import annotations

import datetime as _dt
import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from patchctl import fsutil
from patchctl.clusters import Cluster
from patchctl.errors import RequiredPathMissing
from patchctl.target import Target
from patchctl.train import (
    assets,
    codehook,
    facts,
    launcher,
    minibatch,
    modelinfo,
    rayhead,
    report,
    rollouts,
    settings,
    smoke,
    treeconfig,
    weightsmatch,
)
from patchctl.train.data import TINY_NAME
from patchctl.train.judge import judge
from patchctl.train.logparse import LOSS_KEYS, REWARD_KEYS, LogScan, Progress, Step, pick
from patchctl.train.model import Plan, Ran, Timings
from patchctl.train.profiles import Profile, adapt, fill, load_profiles, resolve_values
from patchctl.train.report import TrainReport

__all__ = ["Plan", "Progress", "TrainReport", "default_run_dir", "launch", "plan", "prepare", "train"]


def default_run_dir(target: Target, profile: str) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return target.root / ".patchctl" / "runs" / f"{profile}-{stamp}"


def plan(
    target: Target,
    profile: Profile,
    cluster: Cluster | None,
    overrides: list[str] | tuple[str, ...],
    python: str,
    run_dir: Path | None = None,
) -> Plan:
    """Fill the profile into an exact command; nothing is written."""
    profile, adapted = adapt(profile, target.version)
    run_dir = (run_dir or default_run_dir(target, profile.name)).resolve()
    # the smoke profile's model and data are patchctl's own, whatever the cluster or git_ignore.py say
    own = smoke.paths(run_dir / "assets") if profile.assets in assets.OWN else {}
    found = settings.resolve([n for n in settings.wanted(profile, cluster) if n not in own], target.root, cluster)
    given = {"RUN_DIR": str(run_dir), **{k: s.value for k, s in found.items()}, **own}
    sources = {**{k: s.source for k, s in found.items()}, **{k: "patchctl's smoke assets" for k in own}}
    values = resolve_values(profile, given)
    extra_env = dict(cluster.env) if cluster is not None else {}
    head = None
    if profile.ray_head_cpus and not os.environ.get("RAY_ADDRESS") and "RAY_ADDRESS" not in extra_env:
        head = rayhead.spec(python, profile.ray_head_cpus, run_dir / "ray-head.log")
        extra_env["RAY_ADDRESS"] = head.address
        extra_env.update(rayhead.auth_env(head))
        # a driver that connects to a running cluster must not ask for CPUs of its own
        overrides = ["ray_kwargs.ray_init.num_cpus=null", *overrides]
    # every process of the run records the patched modules it imports (none to watch: no hook)
    watched = codehook.watches(target.root)
    if watched:
        extra_env.update(codehook.env(run_dir, watched))
    hook = run_dir / codehook.DIR_NAME if watched else None
    trainer = launcher.build(
        target.root, profile, values, overrides, python, run_dir / "train.log", extra_env, hook=hook
    )
    check_rollout(target, profile, trainer.argv)
    treeconfig.check(target.root, target.version, trainer.argv[1 + len(launcher.ENTRY) :])
    # the gates judge the command as launched: an override can leave one optimizer step per step
    profile = replace(profile, gates=minibatch.fit(profile.gates, trainer.argv))
    return Plan(profile, run_dir, trainer, values, head, adapted, sources, watched)


#: the profiles that need no model or data, in the order a default is picked from
SMOKE_PROFILES = ("smoke", "smoke-vllm")


def default_profile(target: Target) -> tuple[str, str]:
    """The smoke profile the tree can run, and why it was picked, for a command without ``--profile``.

    ``smoke`` rolls out with HuggingFace, which verl >= 0.6 (the README's own 0.6.1) dropped from
    its registry; a default the tree refuses was a newcomer's first error. The tree's own rollouts
    decide, as :func:`check_rollout` reads them; where they cannot be told, ``smoke`` stays.
    """
    return pick_smoke(target.root, f"verl {target.version}" if target.version else "this tree")


def pick_smoke(root: Path, verl: str) -> tuple[str, str]:
    """:func:`default_profile` for a tree known only by its folder (``validate``'s source tree);
    ``verl`` names it in the reason."""
    have = rollouts.available(root)
    profiles = load_profiles()
    if have is None:
        return SMOKE_PROFILES[0], f"{verl}'s rollouts could not be read"
    for name in SMOKE_PROFILES:
        if name in profiles and profiles[name].rollout in have:
            return name, f"{verl} has the {profiles[name].rollout} rollout"
    return SMOKE_PROFILES[0], f"{verl} has none of the smoke profiles' rollouts ({', '.join(have) or 'none found'})"


def check_rollout(target: Target, profile: Profile, argv: tuple[str, ...] | list[str]) -> None:
    """Refuse a rollout the tree lacks (smoke's HF rollout on verl >= 0.6), naming the profiles it can run."""
    rollout = rollouts.chosen(argv, profile.rollout)
    have = rollouts.available(target.root)
    if have is None or rollout in have:
        return
    instead = tuple(
        n
        for n, p in sorted(load_profiles().items())
        if p.rollout in have and p.needs == profile.needs and n != profile.name
    )
    verl = f"verl {target.version} at {target.root}" if target.version else f"the verl tree at {target.root}"
    raise rollouts.RolloutMissing(profile.name, rollout, verl, have, instead)


def prepare(p: Plan) -> None:
    """What must exist before the launch (the smoke assets are built while the trainer starts)."""
    if p.watched:
        codehook.install(p.run_dir)
    for step in p.profile.prepare:
        if step == "tiny-dataset":
            data_dir = Path(p.values["DATA_DIR"])
            if not (data_dir / TINY_NAME).is_file():
                assets.build("tiny-dataset", data_dir, p.launch.argv[0], _trainer_env(p))
    for raw in p.profile.requires:
        path = Path(fill(raw, p.values, f"profile {p.profile.name}, requires"))
        if not path.exists():
            raise RequiredPathMissing(
                path, p.profile.name, [f"{k} from {p.sources[k]}" for k in p.sources if "{" + k + "}" in raw]
            )


def _trainer_env(p: Plan) -> dict[str, str]:
    """The environment the trainer gets, so its interpreter builds the assets as it would run."""
    return {**os.environ, **p.launch.env}


def train(
    p: Plan,
    target: Target,
    t0: float,
    *,
    timeout: float | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    on_line: Callable[[str, float], None] | None = None,
    on_hang: Callable[[], None] | None = None,
) -> TrainReport:
    """Run the plan: launch → judge → report; ``t0`` is the ``time.monotonic()`` that counts as the launch."""
    p.run_dir.mkdir(parents=True, exist_ok=True)
    prepare(p)
    # facts about the machine and the plot's import are gathered while the trainer runs
    gathering = facts.Gathering(p.launch.argv[0], _trainer_env(p), also=report.warm)
    head = rayhead.Head(p.head, p.launch.env, p.launch.cwd) if p.head else None
    try:
        ran = launch(p, t0, timeout=timeout, on_progress=on_progress, on_line=on_line, on_hang=on_hang)
    finally:
        # the head stops while the run is judged and reported: Ray's teardown delays no verdict
        stopper = threading.Thread(target=head.stop, name="ray-head-stop") if head else None
        if stopper:
            stopper.start()
    proof = codehook.read(p.run_dir, target.root, p.watched) if p.watched else None
    weights = weightsmatch.parse(codehook.texts(p.run_dir)) if p.watched else None
    judgement = judge(ran, p.profile.gates, p.launch.log, proof, weights)
    done = report.write(p, ran, judgement, gathering.result(target), t0)
    if stopper:
        stopper.join()
    return done


def launch(
    p: Plan,
    t0: float,
    *,
    timeout: float | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    on_line: Callable[[str, float], None] | None = None,
    on_hang: Callable[[], None] | None = None,
) -> Ran:
    """Run the trainer to its end, reading each line it prints into the log scan as it comes.

    The smoke assets are built once the trainer is launched: verl reads the model and data only in
    its TaskRunner, seconds later. ``on_line`` gets every line, ``on_progress`` each logged step.
    """
    scan = LogScan()
    ready: list[float] = []
    warming: list[modelinfo.Warming] = []

    def build_assets() -> None:
        if p.profile.assets in assets.OWN:  # built afresh: the builder writes by name, and no link is left there
            built = fsutil.renew_folder(p.run_dir / "assets")
            assets.build(assets.OWN[p.profile.assets], built, p.launch.argv[0], _trainer_env(p))
        ready.append(time.monotonic() - t0)
        # vLLM's model-info cache, a minute before the vLLM server would inspect the model itself
        # (without the code hook's variables: that process is no part of the run it proves)
        if p.profile.rollout == "vllm" and p.values.get("MODEL_PATH"):
            env = {k: v for k, v in _trainer_env(p).items() if k not in (codehook.ENV_DIR, codehook.ENV_WATCH)}
            warming.append(
                modelinfo.Warming(p.launch.argv[0], Path(p.values["MODEL_PATH"]), env, p.run_dir / modelinfo.LOG_NAME)
            )

    def seen(line: str, at: float) -> None:
        step = scan.feed(line, at)
        if on_line:
            on_line(line, at)
        if step is not None and on_progress:
            on_progress(_progress(step, scan, at))

    started = time.monotonic() - t0
    try:
        done = launcher.execute(p.launch, t0, seen, timeout, build_assets, on_hang)
    finally:
        for w in warming:
            w.stop()
    timings = Timings(
        ready[0] if ready else None,
        started,
        scan.moments.get("ray_start"),
        scan.moments.get("task_runner"),
        scan.moments.get("workers_ready"),
        scan.steps[0].at if scan.steps else None,
        scan.steps[-1].at if scan.steps else None,
        done.ended_at,
        None,
    )
    return Ran(done, scan, timings)


def _progress(step: Step, scan: LogScan, at: float) -> Progress:
    first = scan.steps[0]
    per = (at - first.at) / (len(scan.steps) - 1) if len(scan.steps) > 1 and first.at is not None else None
    return Progress(
        step.step, scan.total_steps, pick(step.metrics, REWARD_KEYS), pick(step.metrics, LOSS_KEYS), per, at
    )
