"""What each step of ``validate`` returns: frozen values, so a step's output is its whole effect.

The steps run in order — plan, connect, ship, preflight, ray_up, launch, watch, fetch, teardown —
and :class:`ValidateResult` holds whatever each produced, ready for a table or ``to_json()``.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any

from patchctl.clusters import Host


class Verdict(str, enum.Enum):
    PASS = "pass"  # noqa: S105 - a verdict, not a password
    FAIL = "fail"
    INTERRUPTED = "interrupted"
    #: --dry-run: the commands were printed, nothing was started
    PLANNED = "planned"


@dataclass(frozen=True)
class Node:
    """One host as validate drives it: its ssh side (``host``) and its Ray side."""

    #: the name the tables use (the ssh destination; ``dest:root`` where one is listed twice)
    label: str
    host: Host
    #: 0 is the head
    index: int
    #: ``host.env`` plus the NCCL/Gloo interface variables, set for every process started there
    env: dict[str, str] = field(default_factory=dict)

    @property
    def role(self) -> str:
        return "head" if self.index == 0 else "worker"


@dataclass(frozen=True)
class RemoteCommand:
    """A command validate runs on a host, for --dry-run and the JSON result."""

    label: str
    #: what it is for: ship, preflight, ray-head, ray-worker, form, train, fetch, reap
    purpose: str
    #: the local argv (ssh ...), the remote part quoted for the remote shell
    argv: tuple[str, ...]


@dataclass(frozen=True)
class CheckRow:
    check: str
    #: pass / warn / fail / skip
    status: str
    value: str
    fix: str = ""


@dataclass(frozen=True)
class HostPreflight:
    label: str
    rows: tuple[CheckRow, ...]
    #: Ray's node IP for the host (configured, else the address ssh reached it at)
    address: str
    #: GPUs Ray will offer there (configured, else counted)
    gpus: int
    #: a Ray node already running at ``address``: {"pid", "gcs"} (None: none)
    existing: dict[str, Any] | None
    seconds: float
    #: the host's software stack, found without importing it (host/stack.py)
    stack: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> tuple[CheckRow, ...]:
        return tuple(r for r in self.rows if r.status == "fail")


@dataclass(frozen=True)
class RayNode:
    label: str
    address: str
    gpus: int
    #: seconds from the first ssh of the bring-up until Ray listed the node
    joined_at: float
    #: CUDA_VISIBLE_DEVICES as a task holding every GPU of the node saw it
    cuda_visible_devices: str | None = None
    #: the physical GPUs behind it (nvidia-smi UUIDs; empty where there is no nvidia-smi)
    gpu_uuids: tuple[str, ...] = ()
    gpu_names: tuple[str, ...] = ()
    #: the variables validate checks reached Ray's workers (NCCL_NVLS_ENABLE, ...)
    worker_env: dict[str, str | None] = field(default_factory=dict)
    #: True when the node was already running and validate only joined it (never stopped)
    joined_existing: bool = False


@dataclass(frozen=True)
class RayCluster:
    #: the GCS address the trainer connects to
    address: str
    nodes: tuple[RayNode, ...]
    #: seconds from the first ssh of the bring-up until every node was listed with its GPUs
    seconds: float
    #: what two callers without the token got from the cluster after bring-up:
    #: {"driver"|"gcs": {"outcome": refused/accepted/unknown, "detail"}}
    auth: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def nnodes(self) -> int:
        return len(self.nodes)

    @property
    def gpus_per_node(self) -> int:
        return self.nodes[0].gpus if self.nodes else 0


@dataclass(frozen=True)
class Trained:
    """What the trainer on the head ended with (its report is fetched separately)."""

    passed: bool
    returncode: int | None
    steps: int
    #: where the head wrote the run (log, report.json, report.png)
    remote_run_dir: str
    command: tuple[str, ...]
    gates: tuple[dict[str, Any], ...] = ()
    doctor: tuple[dict[str, Any], ...] = ()
    #: the last lines of the log, for a cause when the trainer died
    tail: tuple[str, ...] = ()
    #: the files the head wrote into its run directory (what fetch copies)
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class HostTeardown:
    label: str
    #: stopped / joined-left-alone / nothing-started / unreachable
    status: str
    #: processes of this run that were stopped there
    stopped: int = 0
    #: processes of this run still alive afterwards (should be none)
    left: tuple[int, ...] = ()
    reason: str = ""


@dataclass(frozen=True)
class ValidateResult:
    cluster: str
    profile: str
    verdict: Verdict
    #: one line naming the host and what happened ("" on a pass)
    cause: str = ""
    #: the host the cause names
    host: str = ""
    #: the step the run ended in
    stage: str = ""
    run_id: str = ""
    run_dir: str | None = None
    commands: tuple[RemoteCommand, ...] = ()
    trainer_command: tuple[str, ...] = ()
    preflight: tuple[HostPreflight, ...] = ()
    ray: RayCluster | None = None
    trained: Trained | None = None
    fetched: tuple[str, ...] = ()
    teardown: tuple[HostTeardown, ...] = ()
    #: seconds per phase: connect, preflight, ray_up, startup, first_step, steps, teardown, fetch, total
    timings: dict[str, float | None] = field(default_factory=dict)
    #: --compare's summary, when asked
    comparison: dict[str, Any] | None = None
    #: --insecure-ray was given: the run did not insist that its cluster refuses strangers
    insecure_ray: bool = False
    #: the health checks' results (validate/checks/runner.py Health), when any ran
    health: Any = None
    #: a Slurm cluster's job: {"job_id", "state", "reason", "nodes", "exit_code"} (None over ssh)
    slurm: dict[str, Any] | None = None
    #: --baseline's verdict (validate/baseline.py), when asked
    baseline: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["verdict"] = self.verdict.value
        for row in doc["commands"]:
            row["argv"] = list(row["argv"])
        for node in doc["preflight"]:
            node["ok"] = not any(r["status"] == "fail" for r in node["rows"])
        return doc


@dataclass(frozen=True)
class Note:
    """A line for the user while the run goes: which step, which host, what happened."""

    stage: str
    host: str
    text: str
