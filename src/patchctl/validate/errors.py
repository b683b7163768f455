"""Conditions that end a ``validate`` run, each a :class:`PatchctlError` built from its fields.

The orchestrator catches them, tears down what it started and turns each into the run's verdict:
the message is the one-line cause, naming the host and what to do.
"""

from __future__ import annotations

from typing import Any

from patchctl.errors import PatchctlError


class ValidateFailed(PatchctlError):
    """The root of validate's run-ending conditions; ``host`` is who caused it ("" for none)."""

    host: str = ""
    #: the step that stopped: preflight, ray-up, launch, watch, fetch
    stage: str = ""
    #: the hosts' preflight results when it ended there (the table still shows them)
    preflight: tuple[Any, ...] = ()


class HostUnreachable(ValidateFailed):
    def __init__(self, host: str, stage: str, reason: str) -> None:
        self.host, self.stage, self.reason = host, stage, reason
        super().__init__(f"{host}: unreachable ({reason})")


class HostNotReady(ValidateFailed):
    """The host answered but cannot run validate's side (no tree, no env file, no python)."""

    def __init__(self, host: str, stage: str, problem: str, fix: str) -> None:
        self.host, self.stage, self.problem, self.fix = host, stage, problem, fix
        super().__init__(f"{host}: {problem}; {fix}")


class PreflightFailed(ValidateFailed):
    stage = "preflight"

    def __init__(self, host: str, check: str, value: str, fix: str, others: int = 0) -> None:
        self.host, self.check, self.value, self.fix = host, check, value, fix
        more = f" (and {others} more failing check(s), see the table)" if others else ""
        super().__init__(f"{host}: preflight check {check!r} failed: {value}; {fix or 'see the table'}{more}")


class RayAlreadyRunning(ValidateFailed):
    stage = "ray-up"

    def __init__(self, host: str, address: str, pid: int, gcs: str) -> None:
        self.host, self.address, self.pid, self.gcs = host, address, pid, gcs
        super().__init__(
            f"{host}: a Ray node is already running at {address} (raylet pid {pid}, cluster {gcs}); "
            "validate leaves it alone: stop it there (`ray stop`), or pass --join to use it"
        )


class RayStartFailed(ValidateFailed):
    stage = "ray-up"

    def __init__(self, host: str, problem: str, tail: str) -> None:
        self.host, self.problem, self.tail = host, problem, tail
        super().__init__(f"{host}: Ray did not start ({problem}); its log ends: {tail or 'nothing logged'}")


class WorkerNeverJoined(ValidateFailed):
    stage = "ray-up"

    def __init__(self, host: str, address: str, waited: float, tail: str) -> None:
        self.host, self.address, self.waited, self.tail = host, address, waited, tail
        super().__init__(
            f"{host}: its Ray node ({address}) did not join the head within {waited:.0f} s; check that "
            f"it reaches the head's address and port (firewall, proxy variables, address); its Ray log "
            f"ends: {tail or 'nothing logged'}"
        )


class DuplicateGpu(ValidateFailed):
    stage = "ray-up"

    def __init__(self, gpu: str, holders: list[tuple[str, str]]) -> None:
        self.gpu, self.holders = gpu, holders
        self.host = holders[0][0]
        who = ", ".join(f"{h} (CUDA_VISIBLE_DEVICES={v or 'unset'})" for h, v in holders)
        #: what was found, without the fix (a Slurm job names its own: gres.conf, not the config)
        self.found = f"{self.host}: GPU {gpu} is seen by more than one Ray node or rank: {who}"
        super().__init__(
            f"{self.found}; give each host its own GPUs with hosts[i].env.CUDA_VISIBLE_DEVICES in the cluster config"
        )


class UnevenGpus(ValidateFailed):
    stage = "ray-up"

    def __init__(self, counts: list[tuple[str, int]]) -> None:
        self.counts = counts
        self.host = counts[0][0]
        #: the counts as shown, "host: n, ..." (a Slurm job words its own message around them)
        self.shown = shown = ", ".join(f"{h}: {n}" for h, n in counts)
        super().__init__(
            f"{self.host}: the hosts offer different GPU counts ({shown}); verl needs the same on "
            "every node: set gpus (or hosts[i].gpus) so they agree"
        )


class AuthNotEnforced(ValidateFailed):
    """A caller without the run's token got in: the cluster is open to anyone who reaches it."""

    stage = "ray-up"

    def __init__(self, host: str, findings: dict[str, dict[str, str]]) -> None:
        self.host, self.findings = host, findings
        what = "; ".join(
            f"{k}: {v['outcome']} ({v['detail']})" for k, v in findings.items() if v["outcome"] != "refused"
        )
        super().__init__(
            f"{host}: the run's Ray cluster did not prove that it refuses callers without the token "
            f"({what}); it was stopped. Install Ray >= 2.52 on the hosts, or pass --insecure-ray on a "
            "cluster firewalled from everyone else"
        )


class ForeignNode(ValidateFailed):
    """A node the run did not start is in its cluster."""

    def __init__(self, host: str, stage: str, nodes: list[dict[str, str]]) -> None:
        self.host, self.stage, self.nodes = host, stage, nodes
        who = ", ".join(f"{n['address']} (node {n['node_id'][:12]}, host {n['host'] or '?'})" for n in nodes)
        super().__init__(
            f"{host}: {len(nodes)} node(s) not started by this run joined its Ray cluster: {who}; the "
            "run was stopped. Find who started them; keep the hosts' Ray ports firewalled"
        )


class TrainerFailed(ValidateFailed):
    stage = "watch"

    def __init__(self, host: str, summary: str) -> None:
        self.host, self.summary = host, summary
        super().__init__(f"{host}: {summary}")


class HostLost(ValidateFailed):
    def __init__(self, host: str, stage: str, role: str, reason: str) -> None:
        self.host, self.stage, self.role, self.reason = host, stage, role, reason
        super().__init__(
            f"{host}: the {role} host was lost during {stage} ({reason}); check the host, then run validate again"
        )


class Interrupted(ValidateFailed):
    def __init__(self, stage: str, host: str = "") -> None:
        self.stage, self.host = stage, host
        super().__init__(f"{host or 'validate'}: interrupted (Ctrl-C) during {stage}; what was started was stopped")


class TimedOut(ValidateFailed):
    stage = "watch"

    def __init__(self, host: str, seconds: float) -> None:
        self.host, self.seconds = host, seconds
        super().__init__(
            f"{host}: the run passed --timeout ({seconds:g} s) and was stopped; raise --timeout or "
            "look at the log for where it hung"
        )


class ReportUnreadable(PatchctlError):
    def __init__(self, path: str, problem: str) -> None:
        self.path, self.problem = path, problem
        super().__init__(
            f"{path}: not a patchctl run report ({problem}); pass the report.json that train or validate wrote"
        )


class StackMismatch(ValidateFailed):
    """The hosts' software differs where Ray or NCCL cannot survive it (checks/stack.py)."""

    stage = "stack"

    def __init__(self, mismatches: tuple[str, ...], table: Any) -> None:
        self.mismatches, self.table = mismatches, table
        self.host = table.hosts[-1] if table.hosts else ""
        super().__init__(
            f"{'; '.join(mismatches)}: Ray or NCCL cannot run across these hosts; install the same "
            "versions everywhere (the stack table lists each host's)"
        )


class HealthCheckFailed(ValidateFailed):
    """A health check measured something below its fail bar, or could not measure (checks/)."""

    def __init__(self, check: str, host: str, problem: str, fix: str) -> None:
        self.stage, self.check, self.host, self.problem, self.fix = check, check, host, problem, fix
        super().__init__(f"{host}: {check} check failed: {problem}; {fix}")
