"""Step ``preflight``: ship patchctl's package to every host, then run the host's preflight,
all hosts at once, over the masters migrate's ssh module opened.

A host that cannot be reached, lacks its tree or fails a check stops the run here, before any
Ray process exists anywhere (:class:`PreflightFailed`, naming the host, the check and its fix).
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from patchctl import proc
from patchctl.remote import ssh
from patchctl.remote.rsync import cause
from patchctl.validate import plan as planning
from patchctl.validate import remote
from patchctl.validate.errors import HostNotReady, HostUnreachable, PreflightFailed, ValidateFailed
from patchctl.validate.model import CheckRow, HostPreflight, Node, Note

NoteFn = Callable[[Note], None]


def ship(plan: planning.Plan, node: Node, master: ssh.Master, stage: Path) -> None:
    failed = master.open()
    if failed:
        raise HostUnreachable(node.label, "preflight", failed)
    done = proc.run(planning.ship_argv(plan, node, stage, master.socket), check=False, timeout=plan.cluster.timeout * 4)
    if done.returncode == 255:
        raise HostUnreachable(node.label, "preflight", ssh.unreachable_reason(plan.cluster, node.host, done.stderr))
    if done.returncode != 0:
        missing = "No such file or directory" in done.stderr
        why = cause(done.returncode, done.stderr)
        raise HostNotReady(
            node.label,
            "preflight",
            f"patchctl's package could not be sent ({why})",
            f"run `patchctl migrate {plan.cluster.name}` first" if missing else "check the disk and rsync there",
        )


def skipped(plan: planning.Plan) -> dict[str, str]:
    """Check -> why it is left out: the cluster's ``preflight_skip``, and the checks the profile
    makes moot (vLLM's for a run that does not roll out with vLLM, data and model where patchctl
    builds its own, as for smoke)."""
    from patchctl.train.profiles import load_profile

    out = {name: f"clusters.{plan.cluster.name}.preflight_skip" for name in plan.cluster.preflight_skip}
    if not plan.options.trains:  # --profile health: nothing is rolled out, loaded or read
        return {
            **{n: "not needed by profile health" for n in ("vllm", "vllm_attention_backend", "data", "model")},
            **out,
        }
    profile = load_profile(plan.options.profile)
    moot = [] if profile.rollout == "vllm" else ["vllm", "vllm_attention_backend"]
    moot += [name for key, name in (("DATA_DIR", "data"), ("MODEL_PATH", "model")) if key not in profile.needs]
    for name in moot:
        out.setdefault(name, f"not needed by profile {profile.name}")
    return out


def check_host(plan: planning.Plan, node: Node, master: ssh.Master, stage: Path) -> HostPreflight:
    t0 = time.monotonic()
    ship(plan, node, master, stage)
    return ask(plan, node, master.socket, t0)


def ask(plan: planning.Plan, node: Node, control: Path | None, t0: float) -> HostPreflight:
    """The host's preflight, patchctl's package already there (shipped, or on a Slurm job's shared root)."""
    request = {
        "address": node.host.address,
        "gpus": node.host.gpus,
        "run": plan.run_id,
        "join": plan.options.join,
        "skip": skipped(plan),
        "insecure_ray": plan.options.insecure_ray,
        "ray_port": node.host.ray_port,
        "head": node.index == 0,
        # the host refuses a rollout its tree lacks (train/rollouts.py); health rolls nothing out
        "profile": plan.options.profile if plan.options.trains else None,
        # health starts no Ray: the Ray it would run is not judged (raycheck.py)
        "starts_ray": plan.options.trains,
    }
    try:
        reply = remote.call(
            plan.cluster, node, "preflight", request, timeout=plan.cluster.timeout + 120, control=control
        )
    except remote.Ended as exc:
        kind, problem, fix = remote.failure(plan.cluster, node, exc.returncode, exc.stderr)
        if kind == "unreachable":
            raise HostUnreachable(node.label, "preflight", problem) from None
        raise HostNotReady(node.label, "preflight", problem, fix) from None
    except queue.Empty:
        raise HostNotReady(
            node.label,
            "preflight",
            "the preflight did not answer in time",
            f"check the host's load, or raise clusters.{plan.cluster.name}.timeout",
        ) from None
    rows = tuple(CheckRow(r["check"], r["status"], r["value"], r.get("fix", "")) for r in reply["rows"])
    return HostPreflight(
        node.label,
        rows,
        reply["address"],
        int(reply["gpus"]),
        reply.get("existing"),
        time.monotonic() - t0,
        dict(reply.get("stack") or {}),
    )


def run(plan: planning.Plan, masters: list[ssh.Master], stage: Path, note: NoteFn) -> tuple[HostPreflight, ...]:
    """Every host's preflight; once all ended, raises the first host's failure (in host order)
    with the hosts that answered attached as ``.preflight``, so the table still shows them."""
    with ThreadPoolExecutor(max_workers=len(plan.nodes)) as pool:
        futures = [pool.submit(check_host, plan, n, m, stage) for n, m in zip(plan.nodes, masters, strict=True)]
        results: list[HostPreflight] = []
        errors: list[ValidateFailed] = []
        for n, f in zip(plan.nodes, futures, strict=True):
            try:
                results.append(f.result())
                bad = results[-1].failed
                note(Note("preflight", n.label, "ok" if not bad else f"{len(bad)} check(s) failed"))
            except (HostUnreachable, HostNotReady) as exc:
                errors.append(exc)
                note(Note("preflight", n.label, str(exc)))
    failure: ValidateFailed | None = errors[0] if errors else None
    for r in results:
        if r.failed and failure is None:
            first = r.failed[0]
            failure = PreflightFailed(r.label, first.check, first.value, first.fix, len(r.failed) - 1)
    if failure is not None:
        failure.preflight = tuple(results)
        raise failure
    return tuple(results)
