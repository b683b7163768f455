"""``patchctl validate CLUSTER`` on a Slurm cluster: one batch job, followed from the login node.

ship patchctl's package into the shared root (rsync to the login node, as validate ships it to a
host) -> the request into the run folder (0600, with the run's token; never on a command line)
-> ``sbatch --parsable`` with the job's options as argv words and the script (script.py) on
stdin -> poll ``scontrol`` and the job's output file (follow.py), showing PENDING with its reason
and the time waited, RUNNING with the node list, the trainer's step line -> the job ends -> the
trainer's files and the job's output fetched home -> the same ``ValidateResult`` as over ssh.

Without a shared root nothing the login node holds is assumed visible on a node, its home
included: the job's output goes to the run folder in the batch node's own tree, and once the job
runs, its script waiting, patchctl stages the package and the request and follows the output
through steps of the job (relay.py), and fetches the run folder through one more before the job
ends.

Ctrl-C or SIGTERM cancels the job (``scancel``) and waits until Slurm has ended it, so no Ray or
trainer process is left on a node; the verdict is INTERRUPTED (exit 130).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path, PurePosixPath
from typing import Any

from patchctl import orphans, proc
from patchctl.clusters import Cluster
from patchctl.slurm import follow, login, relay, script
from patchctl.slurm import health as job_health
from patchctl.slurm.errors import LoginFailed, SlurmNotSupported, SlurmRefused
from patchctl.train.logparse import LOSS_KEYS, REWARD_KEYS, LogScan, Progress, pick
from patchctl.validate import baseline as baselines
from patchctl.validate import compare as comparing
from patchctl.validate import plan as planning
from patchctl.validate.checks import runner as checks_runner
from patchctl.validate.checks import stack as stacks
from patchctl.validate.model import (
    CheckRow,
    HostPreflight,
    HostTeardown,
    Note,
    RayCluster,
    RayNode,
    Trained,
    ValidateResult,
    Verdict,
)
from patchctl.validate.teardown import Interrupts, no_interrupts

NoteFn = Callable[[Note], None]
ProgressFn = Callable[[Progress], None]

#: seconds between polls of the job (one ssh each)
POLL = 1.0
#: how often the step following a job's output may be lost before the run ends
RESTARTS = 10
#: tries of the step fetching the run folder without a shared root (the job holds it meanwhile,
#: jobside.HOLD seconds), and the seconds between two
COLLECTS = 5
COLLECT_PAUSE = 2.0
#: a run's folder without a shared root, relative to each node's own tree (own_roots)
RUNS = ".patchctl/runs"
#: the request file's writer on the login node: a private folder, the request from stdin
_WRITE = 'umask 077 && mkdir -p -- "$1" && cat > "$1/job.json"'


def check(cluster: Cluster, options: planning.Options) -> None:
    """What a Slurm validate refuses before anything is sent (exit 2)."""
    job = login.job(cluster)
    if options.join:
        raise SlurmNotSupported(
            cluster.name,
            "--join has nothing to join (a job's nodes are allocated without Ray, and the job starts its own)",
            "leave --join out (to use a Ray cluster already running on hosts, validate them as an ssh cluster)",
        )
    if options.num_cpus is not None and job.cpus_per_task is not None and options.num_cpus > job.cpus_per_task:
        raise SlurmNotSupported(
            cluster.name,
            f"--ray-cpus {options.num_cpus} is more than cpus_per_task = {job.cpus_per_task}",
            f"pass --ray-cpus {job.cpus_per_task} or less, or raise cpus_per_task",
        )


def own_roots(plan: planning.Plan) -> planning.Plan:
    """Without ``shared_root``, the run's folder is relative to the tree each node has of its own
    (the root with ``%n``): it exists on the batch node alone, which patchctl reads through steps
    of the job (relay.py); nothing of the run is written on the login node."""
    if login.job(plan.cluster).shared_root:
        return plan
    return replace(plan, remote_run_dir=str(PurePosixPath(RUNS) / PurePosixPath(plan.remote_run_dir).name))


def request(plan: planning.Plan, stack: bool = False) -> dict[str, Any]:
    """The job's request; ``stack``: the job finds every node's stack (the host preflight) even
    when the profile trains and no other check is asked, for --compare to set beside an earlier run's."""
    c, o, job = plan.cluster, plan.options, login.job(plan.cluster)
    return {
        # each node's own tree (%n in root): the driver enters the node's copy on every step
        "own_roots": not job.shared_root,
        "root": c.root,
        "run_id": plan.run_id,
        "token": plan.auth_token,
        "python": c.python,
        "env": dict(c.env),
        "paths": dict(c.paths),
        "profile": o.profile,
        "overrides": planning.trainer_overrides(o, job.nodes, job.gpus),
        "run_dir": plan.remote_run_dir,
        "timeout": o.timeout,
        "ray_timeout": o.ray_timeout,
        "num_cpus": o.num_cpus,
        "object_store_bytes": o.object_store_bytes,
        "gpus": job.gpus,
        "ray_port": c.hosts[0].ray_port,
        "ceiling": job.time_seconds + 60,
        "insecure_ray": o.insecure_ray,
        "dashboard": o.dashboard,
        "ray_client": o.ray_client,
        # the health checks, run by the job on its nodes as validate runs them over ssh (health.py)
        "checks": list(o.checks),
        "stack": stack,
        "health_settings": asdict(c.health),
        "preflight_skip": list(c.preflight_skip),
    }


def sbatch_words(plan: planning.Plan) -> list[str]:
    job = login.job(plan.cluster)
    return [
        "sbatch",
        "--parsable",
        *job.sbatch_options(),
        f"--job-name=patchctl-validate-{plan.run_id}",
        # without a shared root no path sbatch could name need exist on the batch node (Slurm
        # fails a job whose output it cannot open): the script sends its output into the run
        # folder in the node's own tree itself
        *(
            [f"--output={plan.remote_run_dir}/job.out", f"--chdir={plan.cluster.root}"]
            if job.shared_root
            else ["--output=/dev/null"]
        ),
    ]


def job_script(plan: planning.Plan) -> str:
    c = plan.cluster
    return script.render(plan.run_id, c.root, plan.remote_run_dir, c.python, dict(c.env), login.job(c).shared_root)


class Follow:
    """The job as the poll sees it, turned into notes, the step line and the result's parts."""

    def __init__(
        self, plan: planning.Plan, job_id: str, note: NoteFn, progress: ProgressFn, stack: bool = False
    ) -> None:
        self.plan, self.job_id, self.note, self.progress = plan, job_id, note, progress
        self.stack = stack
        self.out = follow.Output()
        self.state = follow.JobState("SUBMITTED")
        self.t0 = time.monotonic()
        self.marks: dict[str, float] = {}
        self.scan = LogScan()
        self.preflight: list[HostPreflight] = []
        self.ray: RayCluster | None = None
        self.trained: Trained | None = None
        self.nodes: list[str] = []
        self.address: dict[str, str] = {}
        self.joined: dict[str, float] = {}
        self.health: Any = None
        # without a shared root (relay.py): the request staged once the job runs, the stream of
        # its output, what that stream brought (the job's output, should the fetch not happen),
        # the files fetched, and why staging failed
        self.shared = login.job(plan.cluster).shared_root
        self.staged = False
        self.stream: relay.Stream | None = None
        self.batch = ""
        self.streamed: list[str] = []
        self.collected: list[str] = []
        self.failed = ""
        self.restarts = 0
        #: the line that ends the run when the run folder never came home (every try failed)
        self.fetch_failed = ""
        #: set once patchctl cancels the job: nothing more is staged or followed
        self.ending = False

    def poll(self) -> None:
        # without a shared root the login node has no file of the job: the poll asks the state alone
        path = f"{self.plan.remote_run_dir}/job.out" if self.shared else ""
        words = ["sh", "-c", follow.POLL, "patchctl-poll", self.job_id, str(self.out.offset + 1), path]
        done = login.run(self.plan.cluster, words, timeout=60)
        if done.returncode != 0:
            return  # a lost poll: the next one asks again (the job runs on without patchctl)
        head, data = follow.split_poll(done.stdout)
        state = follow.parse_state(head)
        self._state(state)
        for event in self.out.feed(data):
            self._event(event)
        if not self.shared:
            self._relay(state)

    def _relay(self, state: follow.JobState) -> None:
        """Without a shared root: stage once the job runs, then follow its output through a step."""
        c = self.plan.cluster
        if not self.staged and state.state == "RUNNING" and state.batch_host and not self.ending:
            self.staged, self.batch = True, state.batch_host
            count = login.job(c).nodes
            why = relay.stage(c, self.job_id, state.nodes, count) or relay.send_request(
                c, self.job_id, self.batch, self.plan.remote_run_dir, json.dumps(request(self.plan, self.stack))
            )
            if why:
                self.failed = why
                return
            staged = f"patchctl's package and the run's request staged on {state.nodes} (srun --jobid)"
            self.note(Note("queue", f"job {self.job_id}", staged))
        if self.stream is not None:
            self._drain()
            if not self.stream.alive and state.state == "RUNNING" and not self.collected:
                self.stream = None  # lost while the job runs: followed again from what was read
                self.restarts += 1
                if self.restarts > RESTARTS:
                    said = self.out.other[-1] if self.out.other else "no message"
                    self.failed = f"the step following the job's output on {self.batch} ended {RESTARTS} times: {said}"
        if self.stream is None and self.staged and not (self.failed or self.ending) and state.state == "RUNNING":
            path = f"{relay.node_run(c, self.batch, self.plan.remote_run_dir)}/job.out"
            self.stream = relay.Stream(c, self.job_id, self.batch, path, self.out.offset)

    def _drain(self) -> None:
        assert self.stream is not None
        text, said = self.stream.drain()
        self.streamed.append(text)
        for line in said:
            self.streamed.append(line + "\n")
            self.out.other = [*self.out.other, line][-40:]
        for event in self.out.feed(text):
            self._event(event)

    def finish(self) -> None:
        """The job is over: the stream's last bytes (Slurm ends its step with the job)."""
        if self.stream is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.stream.child.wait(timeout=10)
        self.stream.close()
        self._drain()
        self.stream = None

    def _collect(self) -> None:
        """The job's driver holds: the run folder's files home through one step, which lets it end."""
        names = [*(self.trained.files if self.trained else ()), "job.out"]
        run = relay.node_run(self.plan.cluster, self.batch, self.plan.remote_run_dir)
        self.plan.run_dir.mkdir(parents=True, exist_ok=True)
        got: dict[str, None] = {}
        why = ""
        for attempt in range(1, COLLECTS + 1):
            arrived, why = relay.collect(self.plan.cluster, self.job_id, self.batch, run, names, self.plan.run_dir)
            got.update(dict.fromkeys(arrived))
            if not why:
                break
            if attempt < COLLECTS:  # a lost step (srun, the login node's ssh): the job still holds
                self.note(Note("fetch", self.batch, f"the step fetching the run folder {why}; trying again"))
                time.sleep(COLLECT_PAUSE)
        self.collected = list(got)
        if why:
            self.fetch_failed = (
                f"{self.batch}: the run folder could not be fetched: the job's step {why} ({COLLECTS} tries); "
                f"it stays on {self.batch} in {run}: copy it from there (a job or srun on {self.batch}), "
                "or run validate again"
            )
            return
        self.note(Note("fetch", self.batch, f"{len(self.collected)} file(s) of the run folder fetched (srun --jobid)"))

    def _state(self, state: follow.JobState) -> None:
        before = self.state
        self.state = state
        waited = time.monotonic() - self.t0
        if state.state == "PENDING" and (before.state, before.reason) != ("PENDING", state.reason):
            self.note(Note("queue", f"job {self.job_id}", f"PENDING ({state.reason or 'None'}), waited {waited:.0f} s"))
        elif state.state == "RUNNING" and before.state != "RUNNING":
            self.marks.setdefault("running", time.monotonic())
            self.note(
                Note("queue", f"job {self.job_id}", f"RUNNING on {state.nodes} after {waited:.1f} s in the queue")
            )

    def _event(self, e: dict[str, Any]) -> None:
        name = e.get("event")
        head = self.nodes[0] if self.nodes else "head"
        if name == "allocation":
            self.nodes = list(e["nodes"])
        elif name == "preflight":
            rows = tuple(CheckRow(r["check"], r["status"], r["value"], r.get("fix", "")) for r in e["rows"])
            self.preflight.append(HostPreflight(e["node"], rows, "", login.job(self.plan.cluster).gpus, None, 0.0))
            self.marks["preflight"] = time.monotonic()
        elif name == "ray-node":
            self.address[e["address"]] = e["node"]
            self.note(Note("ray-up", e["node"], f"Ray {e['role']} started at {e['address']} (srun)"))
            login_node = self.plan.cluster.hosts[0].ssh
            for what, at in (("dashboard", e.get("dashboard")), ("Ray client server", e.get("client"))):
                if at:  # on a compute node: reached through the login node while the job runs
                    port = at.rsplit(":", 1)[1]
                    self.note(Note("ray-up", e["node"], f"{what} at {at}; from here: ssh -L {port}:{at} {login_node}"))
        elif name == "joined":
            self.joined[e["address"]] = float(e.get("at", 0.0))
            self.note(Note("ray-up", e.get("node") or e["address"], f"node joined with {e['gpus']} GPU(s)"))
        elif name == "ray-formed":
            self.marks["ray_up"] = time.monotonic()
            nodes = tuple(
                RayNode(
                    self.address.get(d["address"], d["address"]),
                    d["address"],
                    len(d.get("uuids", [])) or login.job(self.plan.cluster).gpus,
                    self.joined.get(d["address"], 0.0),
                    d.get("cuda_visible_devices"),
                    tuple(d.get("uuids", [])),
                    tuple(d.get("names", [])),
                    dict(d.get("env", {})),
                )
                for d in e["nodes"]
            )
            self.ray = RayCluster(e["gcs"], nodes, float(e["seconds"]))
            self.note(Note("ray-up", head, f"{len(nodes)} node(s) in Ray at {e['gcs']}"))
        elif name == "note":
            self.note(Note(e["stage"], e["host"], e["text"]))
        elif name == "host-preflight":
            p = e["preflight"]
            rows = tuple(CheckRow(r["check"], r["status"], r["value"], r.get("fix", "")) for r in p["rows"])
            self.preflight.append(
                HostPreflight(p["label"], rows, p["address"], p["gpus"], p.get("existing"), p["seconds"], p["stack"])
            )
            self.note(Note("preflight", p["label"], "ok" if not self.preflight[-1].failed else "check(s) failed"))
        elif name == "health":
            self.health = job_health.load(e["health"])
            self.marks["checks"] = time.monotonic()
        elif name == "train-plan":
            self.note(Note("launch", head, "trainer started: " + planning.show(e["argv"][:3]) + " ..."))
        elif name == "train-line":
            step = self.scan.feed(e["text"], e.get("at"))
            if step is not None:
                now = time.monotonic()
                self.marks.setdefault("first_step", now)
                self.marks["last_step"] = now
                self.progress(_progress(self.scan, step.step, e.get("at") or 0.0))
        elif name == "hold":
            self._collect()
        elif name == "train-reply":
            self.marks["trainer_done"] = time.monotonic()
            self.trained = Trained(
                bool(e["passed"]),
                e.get("returncode"),
                len(self.scan.steps),
                e["run_dir"],
                tuple(e.get("command", ())),
                tuple(e.get("gates", ())),
                tuple(e.get("doctor", ())),
                (),
                tuple(e.get("files", ())),
            )

    def summary(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "state": self.state.state,
            "reason": self.state.reason,
            "nodes": self.state.nodes or ",".join(self.nodes),
            "exit_code": self.state.exit_code,
        }

    def timings(self) -> dict[str, float | None]:
        m, t0 = self.marks, self.t0

        def span(a: str, b: str) -> float | None:
            start = t0 if a == "start" else m.get(a)
            return round(m[b] - start, 2) if start is not None and b in m else None

        return {
            "queue": span("start", "running"),
            "preflight": span("running", "preflight"),
            "checks": span("preflight", "checks"),
            "ray_up": span("checks" if "checks" in m else "preflight", "ray_up"),
            "startup": span("ray_up", "first_step"),
            "steps": span("first_step", "last_step"),
            "trainer_exit": span("last_step", "trainer_done"),
            "fetch": span("ended", "fetch"),
            "total": round(time.monotonic() - t0, 2),
        }


def _progress(scan: LogScan, step: int, at: float) -> Progress:
    first = scan.steps[0]
    per = (at - first.at) / (len(scan.steps) - 1) if len(scan.steps) > 1 and first.at is not None else None
    last = scan.steps[-1].metrics
    return Progress(step, scan.total_steps, pick(last, REWARD_KEYS), pick(last, LOSS_KEYS), per, at)


def submit(plan: planning.Plan, stage: Path, stack: bool = False) -> str:
    c = plan.cluster
    where = c.hosts[0].ssh
    shared = login.job(c).shared_root
    if shared:  # without a shared root both go to the job's nodes once it runs (relay.py)
        shipped = proc.run(planning.ship_argv(plan, plan.head, planning.stage_package(stage)), check=False, timeout=600)
        if shipped.returncode != 0:
            raise LoginFailed(c.name, where, "shipping patchctl's package", login.tail(shipped.stderr))
        wrote = login.run(
            c, ["sh", "-c", _WRITE, "patchctl-validate", plan.remote_run_dir], input=json.dumps(request(plan, stack))
        )
        if wrote.returncode != 0:
            raise LoginFailed(c.name, where, f"writing {plan.remote_run_dir}/job.json", login.tail(wrote.stderr))
    done = login.run(c, sbatch_words(plan), input=job_script(plan))
    job_id = done.stdout.strip().split(";")[0]
    if done.returncode != 0 or not job_id.isdigit():
        if shared:
            login.run(c, ["rm", "-rf", "--", plan.remote_run_dir])  # the request and its token go with it
        raise SlurmRefused(c.name, where, login.tail(done.stderr or done.stdout).removeprefix("sbatch: error: "))
    return job_id


def validate(
    cluster: Cluster,
    options: planning.Options,
    note: NoteFn,
    progress: ProgressFn,
    queue_timeout: float | None = None,
    compare_with: Path | None = None,
    baseline_from: Path | None = None,
) -> ValidateResult:
    check(cluster, options)
    # as over ssh: an unreadable earlier report or baseline stops the run before a job is submitted
    refs = baselines.references(baseline_from) if baseline_from is not None else None
    old_stack = None
    if compare_with is not None:
        if options.trains:
            comparing.load(compare_with)
        old_stack = checks_runner.earlier_stack(compare_with, required=not options.trains)
    plan = own_roots(planning.make(cluster, options))
    job = login.job(cluster)
    cause, stage, host = "", "done", ""
    interrupted = cancelled = False
    with Interrupts() as interrupts, orphans.scratch("pcv-stage-") as stage_dir:
        job_id = submit(plan, Path(stage_dir), compare_with is not None)
        note(Note("queue", f"job {job_id}", f"submitted on {cluster.hosts[0].ssh} ({' '.join(job.sbatch_options())})"))
        f = Follow(plan, job_id, note, progress, compare_with is not None)
        try:
            while True:
                interrupts.check()
                f.poll()
                waited = time.monotonic() - f.t0
                if f.state.state == "PENDING" and queue_timeout is not None and waited > queue_timeout:
                    cancelled = _cancel(cluster, f)
                    cause = (
                        f"job {job_id} still PENDING ({f.state.reason or 'None'}) after {waited:.0f} s "
                        f"(--queue-timeout {queue_timeout:g}); cancelled"
                    )
                    stage, host = "queue", f"job {job_id}"
                    break
                if f.fetch_failed:  # the job only holds the run folder for patchctl: it may end now
                    cancelled = _cancel(cluster, f)
                    cause, stage, host = f.fetch_failed, "fetch", f.batch
                    break
                if f.failed:  # the package or the request never reached the job's nodes ...
                    f.poll()
                if f.failed and not f.state.ended:  # ... and not for the job having ended first
                    cancelled = _cancel(cluster, f)
                    cause, stage, host = f"job {job_id}: {f.failed}; it was cancelled", "start-up", f"job {job_id}"
                    break
                if f.state.ended or (f.state.state == "UNKNOWN" and f.out.last("done")):
                    break
                time.sleep(POLL)
        except KeyboardInterrupt:
            interrupted = True
        interrupts.quiet()
        with no_interrupts():
            if interrupts.seen or interrupted:
                interrupted = True
                cancelled = _cancel(cluster, f)
            f.finish()
            f.marks["ended"] = time.monotonic()
            done = f.out.last("done")
            if not cause and not interrupted:
                if f.state.state in follow.ENDED_BY_SLURM or done is None:
                    # Slurm's word first: the driver's own last line then only says it was ended
                    stage, cause = follow.ended_cause(job_id, f.state, f.out, job.time, cancelled)
                    host = f"job {job_id}"
                else:
                    cause, stage, host = done["cause"], done["stage"], done["node"] if done["cause"] else ""
                    if not cause and f.trained is not None and not f.trained.passed:
                        from patchctl.validate.launch import summary

                        cause, stage, host = summary(f.trained), "training", done["node"]
            if interrupted:
                stage, host = follow._stage(f.out), f"job {job_id}"
                cause = f"validate: interrupted (Ctrl-C) while job {job_id} ran; it was cancelled (scancel)"
            fetched = _fetch(plan, f)
            f.marks["fetch"] = time.monotonic()
    verdict = Verdict.INTERRUPTED if interrupted else (Verdict.FAIL if cause else Verdict.PASS)
    nodes = f.state.nodes or ",".join(f.nodes)
    measured = f.health
    if old_stack is not None and measured is not None and measured.stack is not None:
        # --compare: the stack the job found beside the earlier run's, as over ssh
        measured = replace(measured, stack=stacks.compare(measured.stack, old_stack))
    result = ValidateResult(
        cluster.name,
        options.profile,
        verdict,
        cause,
        host,
        stage,
        plan.run_id,
        str(plan.run_dir),
        (),
        f.trained.command if f.trained else (),
        tuple(f.preflight),
        f.ray,
        f.trained,
        tuple(fetched),
        tuple(HostTeardown(n, "ended with the job") for n in f.nodes),
        f.timings(),
        insecure_ray=options.insecure_ray,
        health=measured,
        slurm={**f.summary(), "nodes": nodes},
    )
    plan.run_dir.mkdir(parents=True, exist_ok=True)
    from patchctl.validate.run import _compare, _write

    _write(plan.run_dir, result)
    # the report came home: --compare and --baseline judge it here, as validate does over ssh
    if compare_with is not None and (plan.run_dir / "report.json").is_file():
        result = replace(result, comparison=_compare(plan.run_dir, compare_with))
        _write(plan.run_dir, result)
    if refs is not None and (plan.run_dir / "report.json").is_file():
        judged = baselines.judge(comparing.load(plan.run_dir), refs)
        note(Note("baseline", f"job {job_id}", judged.line()))
        result = replace(result, baseline=judged.to_json())
        if judged.verdict == "differs" and result.verdict is Verdict.PASS:
            result = replace(result, verdict=Verdict.FAIL, cause=f"baseline {judged.line()}", stage="baseline")
        _write(plan.run_dir, result)
    return result


def _cancel(cluster: Cluster, f: Follow) -> bool:
    """scancel, then wait (bounded) until Slurm has ended the job and with it every process."""
    f.ending = True
    login.run(cluster, ["scancel", f.job_id], timeout=60)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        f.poll()
        if f.state.ended or f.state.state == "UNKNOWN":
            break
        time.sleep(0.5)
    return True


def _fetch(plan: planning.Plan, f: Follow) -> list[str]:
    """The trainer's files and the job's output, into the local run folder."""
    files = [*(f.trained.files if f.trained else ()), "job.out"]
    plan.run_dir.mkdir(parents=True, exist_ok=True)
    if not f.shared:  # fetched by the job's own step (Follow._collect) while it held; else what was streamed
        if "job.out" not in f.collected:
            (plan.run_dir / "job.out").write_text("".join(f.streamed), encoding="utf-8", errors="surrogateescape")
        return [str(plan.run_dir / name) for name in files if (plan.run_dir / name).is_file()]
    done = proc.run(planning.fetch_argv(plan, tuple(files)), check=False, timeout=600)
    del done  # a file the job never wrote is simply not there; what arrived is listed
    return [str(plan.run_dir / name) for name in files if (plan.run_dir / name).is_file()]
