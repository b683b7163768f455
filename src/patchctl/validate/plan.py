"""The plan of a validate run, computed before any host is touched (what --dry-run prints).

Pure: the nodes with their settings, the run's id, every remote command in the order the run
issues them, and the trainer's command as the head will run it.
"""

from __future__ import annotations

import datetime as _dt
import secrets
import shlex
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from patchctl.clusters import Cluster
from patchctl.remote import rsync
from patchctl.remote.hosts import labels
from patchctl.validate import remote
from patchctl.validate.model import Node, RemoteCommand

#: the variables a cluster's env may set for NVLink multicast; listed in --dry-run so a user sees
#: they reach every process (the GPU machines' rule: multicast stays off)
MULTICAST_OFF = ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")


#: validate's own profile: the health checks (validate/checks/), no Ray and no training
HEALTH = "health"


@dataclass(frozen=True)
class Options:
    profile: str = "smoke"
    overrides: tuple[str, ...] = ()
    #: use a Ray node already running on a host instead of refusing
    join: bool = False
    #: seconds to wait for every node to be listed by Ray with its GPUs
    ray_timeout: float = 60.0
    #: seconds the trainer may run (None: no limit)
    timeout: float | None = None
    #: local run directory (default: ./.patchctl/validate/CLUSTER-PROFILE-TIME)
    out: Path | None = None
    #: CPUs each Ray node offers (None: Ray counts them)
    num_cpus: int | None = None
    #: bytes of each node's object store (None: Ray's default)
    object_store_bytes: int | None = None
    #: --insecure-ray: run on a Ray that cannot enforce the token, or that accepts a stranger
    #: (a cluster firewalled from everyone else); the report records it
    insecure_ray: bool = False
    #: seconds a host waits without a heartbeat from patchctl before it stops the run's Ray
    lease: float = 60.0
    #: start Ray's dashboard / client server (neither is needed by the run)
    dashboard: bool = False
    ray_client: bool = False
    #: the health checks to run before Ray (validate/checks/runner.py NAMES); stack always
    checks: tuple[str, ...] = ("stack",)

    @property
    def trains(self) -> bool:
        """Whether the run trains: every profile but ``health``, which only checks the cluster."""
        return self.profile != HEALTH


#: the ceiling's allowance for what is not the trainer: preflight, Ray's start-up, the node probes,
#: the trainer's own start and teardown
CEILING_MARGIN = 900.0
#: the trainer's share of the ceiling when no --timeout bounds it
UNBOUNDED_TRAINING = 24 * 3600.0


@dataclass(frozen=True)
class Plan:
    cluster: Cluster
    options: Options
    run_id: str
    nodes: tuple[Node, ...]
    #: on the head, inside its tree
    remote_run_dir: str
    run_dir: Path
    #: Ray's token for this run's cluster (Ray >= 2.5x authenticates every gRPC call when a token is
    #: set): one per run, sent to the hosts in requests on stdin, never on a command line or in a report
    auth_token: str = ""

    @property
    def head(self) -> Node:
        return self.nodes[0]

    @property
    def ray_auth(self) -> dict[str, str]:
        """What every process of the run gets for Ray's token auth; nothing with --join, whose
        cluster has its own (the hosts' ~/.ray/auth_token, as for the user's own drivers)."""
        return {} if self.options.join else {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.auth_token}

    @property
    def ceiling(self) -> float:
        """The hard ceiling every host enforces on its Ray node, however lively patchctl is:
        the run's own timeouts plus :data:`CEILING_MARGIN`."""
        training = self.options.timeout if self.options.timeout is not None else UNBOUNDED_TRAINING
        return self.options.ray_timeout + training + CEILING_MARGIN

    @property
    def beat(self) -> float:
        """Seconds between heartbeats: several per lease, so one late line never ends a run."""
        return max(0.2, min(10.0, self.options.lease / 6))

    def marker(self, node: Node) -> str:
        """The value every process of ``node`` carries (see host/procs.py)."""
        return f"{self.run_id}.{node.index}"


def nodes(cluster: Cluster) -> tuple[Node, ...]:
    out = []
    for i, (host, label) in enumerate(zip(cluster.hosts, labels(cluster), strict=True)):
        env = dict(host.env) or dict(cluster.env)
        if host.ifname:
            env.setdefault("NCCL_SOCKET_IFNAME", host.ifname)
            env.setdefault("GLOO_SOCKET_IFNAME", host.ifname)
        out.append(Node(label, host, i, env))
    return tuple(out)


def make(cluster: Cluster, options: Options, cwd: Path | None = None) -> Plan:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_id = secrets.token_hex(6)
    ns = nodes(cluster)
    remote_dir = str(PurePosixPath(ns[0].host.root) / ".patchctl" / "runs" / f"validate-{options.profile}-{stamp}")
    local = options.out or (cwd or Path.cwd()) / ".patchctl" / "validate" / f"{cluster.name}-{options.profile}-{stamp}"
    return Plan(cluster, options, run_id, ns, remote_dir, local, secrets.token_hex(24))


def trainer_overrides(options: Options, nnodes: int | str, gpus: int | str) -> list[str]:
    """The trainer's size from what Ray reports, then the user's overrides, which win.

    ``ray_kwargs.ray_init.num_cpus=null``: a driver that joins a running cluster must not ask for
    CPUs of its own (Ray refuses); verl's profiles set it for the single-node case.
    """
    from patchctl.train.launcher import override_key

    given = {override_key(o) for o in options.overrides}
    ours = [f"trainer.nnodes={nnodes}", f"trainer.n_gpus_per_node={gpus}", "ray_kwargs.ray_init.num_cpus=null"]
    return [o for o in ours if override_key(o) not in given] + list(options.overrides)


def commands(plan: Plan) -> tuple[RemoteCommand, ...]:
    """Every remote command of the run in order, as the local argv that runs it."""
    c = plan.cluster
    out = []
    for n in plan.nodes:
        out.append(RemoteCommand(n.label, "ship", tuple(ship_argv(plan, n))))
    for n in plan.nodes:
        out.append(RemoteCommand(n.label, "preflight", tuple(remote.host_argv(c, n, "preflight"))))
    for action, check in (("storage", "storage"), ("allreduce", "interconnect")):
        if check in plan.options.checks:
            out += [RemoteCommand(n.label, check, tuple(remote.host_argv(c, n, action))) for n in plan.nodes]
    if not plan.options.trains:
        return tuple(out)
    for n in plan.nodes:
        out.append(RemoteCommand(n.label, f"ray-{n.role}", tuple(remote.host_argv(c, n, "node"))))
    out.append(RemoteCommand(plan.head.label, "form", tuple(remote.host_argv(c, plan.head, "form"))))
    out.append(RemoteCommand(plan.head.label, "train", tuple(remote.host_argv(c, plan.head, "train"))))
    out.append(RemoteCommand(plan.head.label, "census", tuple(remote.host_argv(c, plan.head, "census"))))
    out.append(RemoteCommand(plan.head.label, "fetch", tuple(fetch_argv(plan))))
    for n in plan.nodes:
        out.append(RemoteCommand(n.label, "reap", tuple(remote.host_argv(c, n, "reap"))))
    return tuple(out)


def package_dir() -> Path:
    import patchctl

    return Path(patchctl.__file__).resolve().parent


def ship_argv(plan: Plan, node: Node, stage: Path | None = None, control: Path | None = None) -> list[str]:
    """rsync of patchctl's own package into the host's tree (incremental: a re-run sends nothing).

    ``stage`` holds ``validate/pkg/patchctl``, a link to the package: with ``-R`` rsync creates
    the missing directories on the host (no ``--mkpath``, which older rsyncs lack), with ``-L``
    it sends the package behind the link, and ``--delete`` reaches only inside it.
    """
    staged = f"{stage or '$STAGE'}/./{remote.PKG_DIR.split('/', 1)[1]}/patchctl"
    dest = str(PurePosixPath(node.host.root) / ".patchctl")
    return [
        *rsync.argv(plan.cluster, control, "-rLtR", "--delete", "--exclude", "__pycache__"),
        "--",
        staged,
        f"{node.host.ssh}:{dest}/",
    ]


def stage_package(into: Path) -> Path:
    """``into/validate/pkg/patchctl`` -> patchctl's package directory; returns ``into``."""
    link = into / remote.PKG_DIR.split("/", 1)[1] / "patchctl"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(package_dir(), target_is_directory=True)
    return into


def fetch_argv(
    plan: Plan, files: tuple[str, ...] = ("train.log", "report.json", "report.png"), control: Path | None = None
) -> list[str]:
    """rsync of the head's run files into the local run directory (one connection for all).

    The run directory goes to rsync absolute: rsync reads a relative ``--out run:1`` as the
    folder ``1/`` on a host called ``run`` (issue 41 req 5).
    """
    where = plan.remote_run_dir
    sources = [f"{plan.head.host.ssh}:{where}/{files[0]}", *(f":{where}/{f}" for f in files[1:])]
    # -r only for the folders a timed-out run leaves (stacks/, nccl_trace/); rsync copies no FIFO
    options = ("-rt",) if any(f in ("stacks", "nccl_trace") for f in files) else ("-t",)
    return [*rsync.argv(plan.cluster, control, *options), "--", *sources, f"{plan.run_dir.absolute()}/"]


def show(argv: tuple[str, ...] | list[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)
