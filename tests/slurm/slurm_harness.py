"""A real Slurm on one host, for tests: ``munged``, ``slurmctld`` and two ``slurmd`` (n1, n2).

Every daemon runs in the foreground as a child of the test process, with its own ports, spool,
state and log folders under one base directory, and a private ``munged`` socket; nothing of the
machine's own ``/etc/slurm`` or ``/run/munge`` is read or touched. The clients (``sbatch``,
``srun``, ``squeue``...) find this cluster through ``SLURM_CONF``, which the login node's sshd
sets for its sessions as a real login node's ``/etc/slurm/slurm.conf`` would.

Each node has an address of its own on a loopback net (``NodeAddr``), so Ray's nodes inside a
job are as distinct as on separate machines. ``close`` cancels every job of this cluster, ends
the step daemons (``slurmstepd``) this cluster's slurmd started, then the daemons: nothing is
left running.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from sshd_harness import _descendants

#: the daemons and clients the harness needs, and the Debian package of each
TOOLS = {
    "/usr/sbin/munged": "munge",
    "/usr/sbin/slurmctld": "slurmctld",
    "/usr/sbin/slurmd": "slurmd",
    "sbatch": "slurm-client",
    "srun": "slurm-client",
}
NODES = ("n1", "n2")


@dataclass(frozen=True)
class Layout:
    """Which nodes a harness cluster has, their CPUs and GPUs, and its partitions. The tests'
    default is two CPU nodes in one partition; the GPU proof (docs/validation/slurm/) gives each
    node the device files of its GPUs (``gres.conf``) and a partition per job shape."""

    #: node name -> its GPUs' device files (empty: a CPU node)
    nodes: dict[str, tuple[str, ...]] = field(default_factory=lambda: {n: () for n in NODES})
    cpus: int = 2
    #: partition name -> its nodes; the first is the default
    partitions: dict[str, tuple[str, ...]] = field(default_factory=lambda: {"debug": NODES})
    #: one machine playing several GPU nodes: Slurm numbers each node's GPUs from 0 (a real node's
    #: own GPU 0), so two nodes here would both get CUDA_VISIBLE_DEVICES=0, one physical GPU. True:
    #: a TaskProlog turns each node's local numbers into its device files' (n2's /dev/nvidia1 -> 1)
    physical: bool = False
    #: cgroup.conf: Slurm's cgroup/v2 plugin (autodetected where /sys/fs/cgroup is cgroup2) wants
    #: systemd over dbus, which a VM or container may not run; no plugin here uses cgroups
    cgroup: str = "CgroupPlugin=cgroup/v1\n"
    #: seconds the nodes have to come up
    idle_timeout: float = 30.0


def missing_tools() -> str | None:
    for tool, package in TOOLS.items():
        if shutil.which(tool) is None:
            return f"{tool} not found: apt-get install -y slurm-wlm munge (package {package})"
    if os.getuid() != 0:
        return "a private Slurm runs its slurmd as root (slurmd must be root to start jobs)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Daemon:
    name: str
    argv: list[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self, env: dict[str, str]) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, start_new_session=True
            )

    def stop(self, sig: int = signal.SIGTERM, wait: float = 10.0) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def restart(self, env: dict[str, str], argv: list[str]) -> None:
        self.stop()
        self.argv = argv
        self.start(env)

    def kill(self) -> None:
        """SIGKILL, as a machine that loses power: its jobs' steps stay as they were."""
        self.stop(signal.SIGKILL)


class SlurmCluster:
    def __init__(self, base: Path, layout: Layout | None = None) -> None:
        self.base = base
        self.layout = layout or Layout()
        self.nodes = tuple(self.layout.nodes)
        self.conf = base / "slurm.conf"
        net = f"127.{secrets.randbelow(200) + 20}.{secrets.randbelow(250) + 1}"
        #: node name -> the address its Ray node uses (Slurm's NodeAddr)
        self.address = {n: f"{net}.{i + 2}" for i, n in enumerate(self.nodes)}
        for sub in ("munge", "state", "log", *(f"spool/{n}" for n in self.nodes)):
            (base / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(base / "munge", 0o711)  # the clients reach munged's socket through it
        key = base / "munge" / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        os.chmod(key, 0o400)
        self.socket = base / "munge" / "socket"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self._write_conf()
        m = base / "munge"
        self.munged = Daemon(
            "munged",
            [
                "/usr/sbin/munged",
                "-F",
                "-f",  # root and a folder under /tmp: munged wants both forced
                f"--socket={self.socket}",
                f"--key-file={key}",
                f"--pid-file={m / 'pid'}",
                f"--seed-file={m / 'seed'}",
                f"--log-file={m / 'log'}",
                "--num-threads=4",
            ],
            base / "log" / "munged.out",
        )
        self.ctld = Daemon("slurmctld", ["/usr/sbin/slurmctld", "-D", "-f", str(self.conf)], base / "log" / "ctld.out")
        self.slurmd = {n: Daemon(n, self._slurmd_argv(n), base / "log" / f"{n}.out") for n in self.nodes}
        try:
            self.start()
        except BaseException:  # a node that never came up: the daemons that did go too
            self.close()
            raise

    def _slurmd_argv(self, node: str) -> list[str]:
        return ["/usr/sbin/slurmd", "-D", "-N", node, "-f", str(self.conf)]

    def remount(self, node: str, source: Path, over: Path) -> None:
        """Restart ``node``'s slurmd in a mount namespace of its own where ``source`` is mounted
        over ``over``: its jobs see another tree at the same path, as behind another NFS mount."""
        script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
        argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "remount", str(source), str(over)]
        self.slurmd[node].restart(self.env, [*argv, *self._slurmd_argv(node)])
        self.wait_idle()

    def _write_conf(self) -> None:
        b = self.base
        self.ctld_port = _free_port()
        ports = {n: _free_port() for n in self.nodes}
        host = socket.gethostname()
        gpus = self.layout.nodes
        nodes = [
            f"NodeName={n} NodeHostname={host} NodeAddr={self.address[n]} Port={ports[n]} CPUs={self.layout.cpus} "
            + (f"Gres=gpu:{len(gpus[n])} " if gpus[n] else "")
            + "RealMemory=1000 State=UNKNOWN"
            for n in self.nodes
        ]
        parts = [
            f"PartitionName={name} Nodes={','.join(members)} Default={'YES' if i == 0 else 'NO'} "
            "MaxTime=INFINITE State=UP OverSubscribe=FORCE:4"
            for i, (name, members) in enumerate(self.layout.partitions.items())
        ]
        if any(gpus.values()):  # each node's GPUs by device file: Slurm sets CUDA_VISIBLE_DEVICES from them
            (b / "gres.conf").write_text(
                "".join(f"NodeName={n} Name=gpu File={f}\n" for n, files in gpus.items() for f in files)
            )
        (b / "cgroup.conf").write_text(self.layout.cgroup)
        prolog = b / "task_prolog.sh"
        if self.layout.physical:
            cases = "".join(
                f"{n}) set -- {' '.join(_number(f) for f in files)} ;;\n" for n, files in gpus.items() if files
            )
            prolog.write_text(_PROLOG.replace("CASES\n", cases))
            prolog.chmod(0o755)
        self.conf.write_text(
            "\n".join(
                [
                    "ClusterName=pctest",
                    "SlurmctldHost=localhost(127.0.0.1)",
                    f"SlurmctldPort={self.ctld_port}",
                    "SlurmUser=root",
                    "SlurmdUser=root",
                    "AuthType=auth/munge",
                    "CredType=cred/munge",
                    f"AuthInfo=socket={self.socket}",
                    f"StateSaveLocation={b / 'state'}",
                    f"SlurmdSpoolDir={b / 'spool'}/%n",
                    f"SlurmctldPidFile={b / 'ctld.pid'}",
                    f"SlurmdPidFile={b / 'spool'}/%n/slurmd.pid",
                    f"SlurmctldLogFile={b / 'log' / 'ctld.log'}",
                    f"SlurmdLogFile={b / 'log'}/slurmd-%n.log",
                    # no cgroup plugins: a container's cgroup tree is not ours to configure
                    "ProctrackType=proctrack/linuxproc",
                    "TaskPlugin=task/none",
                    "JobAcctGatherType=jobacct_gather/none",
                    "AccountingStorageType=accounting_storage/none",
                    "JobCompType=jobcomp/none",
                    "MpiDefault=none",
                    "SwitchType=switch/none",
                    "SchedulerType=sched/builtin",
                    "SelectType=select/cons_tres",
                    "SelectTypeParameters=CR_CPU",
                    "ReturnToService=2",
                    *(["GresTypes=gpu"] if any(gpus.values()) else []),
                    *([f"TaskProlog={prolog}"] if self.layout.physical else []),
                    # a killed slurmd is noticed in seconds (the node-failure test), a job's end too
                    "SlurmdTimeout=5",
                    "SlurmctldTimeout=5",
                    "MessageTimeout=5",
                    "InactiveLimit=0",
                    "KillWait=2",
                    "OverTimeLimit=0",
                    "MinJobAge=600",
                    "JobRequeue=0",
                    *nodes,
                    *parts,
                    "",
                ]
            )
        )

    def start(self) -> None:
        t0 = time.monotonic()
        self.munged.start(self.env)
        self._wait(lambda: self.socket.exists(), "munged's socket", self.munged)
        self.ctld.start(self.env)
        self._wait(lambda: _listening(self.ctld_port), "slurmctld's port", self.ctld)
        for d in self.slurmd.values():
            d.start(self.env)
        self.wait_idle(self.nodes, since=t0, timeout=self.layout.idle_timeout)

    def _wait(self, ready: object, what: str, daemon: Daemon, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if callable(ready) and ready():
                return
            if daemon.proc is not None and daemon.proc.poll() is not None:
                raise RuntimeError(f"{daemon.name} exited: {daemon.log.read_text()[-2000:]}")
            time.sleep(0.05)
        raise RuntimeError(f"{what} not ready in {timeout} s: {daemon.log.read_text()[-2000:]}")

    def wait_idle(self, nodes: tuple[str, ...] = (), since: float | None = None, timeout: float = 30.0) -> None:
        """Until every node is idle (registered and free), resuming a node left down by a test."""
        nodes = nodes or self.nodes
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = self.node_states()
            if all(states.get(n, "").startswith("idle") for n in nodes):
                return
            for n in nodes:
                if "down" in states.get(n, "") or "drain" in states.get(n, ""):
                    self.run("scontrol", "update", f"NodeName={n}", "State=RESUME")
            time.sleep(0.1)
        raise RuntimeError(f"nodes not idle in {timeout} s: {self.node_states()}")

    def node_states(self) -> dict[str, str]:
        out = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False).stdout
        return dict(line.split() for line in out.splitlines() if len(line.split()) == 2)

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, check=check, timeout=30)

    def jobs(self) -> list[str]:
        return self.run("squeue", "-h", "-o", "%i", check=False).stdout.split()

    def reset(self) -> None:
        """Between tests: every job of this cluster cancelled, every node back and idle."""
        if self.jobs():
            self.run("scancel", "--full", *self.jobs(), check=False)
        deadline = time.monotonic() + 30
        while self.jobs() and time.monotonic() < deadline:
            time.sleep(0.1)
        for n, d in self.slurmd.items():
            if d.argv != self._slurmd_argv(n):  # a remounted node gets the machine's own view back
                d.restart(self.env, self._slurmd_argv(n))
            elif d.proc is None or d.proc.poll() is not None:
                d.start(self.env)
        self.wait_idle()

    def steps(self) -> list[int]:
        """The pids of the ``slurmstepd`` processes of this cluster: those holding a socket in its
        spool (a step daemon outlives a killed slurmd; it is ours to end, no other is)."""
        spool = str(self.base / "spool") + "/"
        inodes = set()
        with contextlib.suppress(OSError):
            for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
                parts = line.split()
                if len(parts) >= 8 and parts[7].startswith(spool):
                    inodes.add(f"socket:[{parts[6]}]")
        out = []
        for pid in (p for p in os.listdir("/proc") if p.isdigit()):
            with contextlib.suppress(OSError):
                if any(os.readlink(f"/proc/{pid}/fd/{fd}") in inodes for fd in os.listdir(f"/proc/{pid}/fd")):
                    out.append(int(pid))
        return out

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self.jobs():
                self.run("scancel", "--full", *self.jobs(), check=False)
                deadline = time.monotonic() + 15
                while self.jobs() and time.monotonic() < deadline:
                    time.sleep(0.1)
        for d in self.slurmd.values():
            d.stop()
        for step in self.steps():  # with the job processes below each
            for pid in [step, *_descendants(step)]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self.ctld.stop()
        self.munged.stop()


#: the TaskProlog of a ``physical`` layout: Slurm's local GPU numbers -> the machine's (its
#: ``export`` lines set the task's environment)
_PROLOG = """#!/bin/sh
[ -n "$CUDA_VISIBLE_DEVICES" ] || exit 0
case "$SLURMD_NODENAME" in
CASES
*) exit 0 ;;
esac
out=""
for i in $(echo "$CUDA_VISIBLE_DEVICES" | tr , ' '); do
    eval "d=\\${$((i + 1))}"
    out="${out:+$out,}$d"
done
echo "export CUDA_VISIBLE_DEVICES=$out"
# Slurm's gres/gpu sets these two to the same local numbers: map them alike, as a real node's
# would read (otherwise n2 had CUDA_VISIBLE_DEVICES=1 beside ROCR_VISIBLE_DEVICES=0)
for v in ROCR_VISIBLE_DEVICES GPU_DEVICE_ORDINAL; do
    eval "cur=\\${$v:-}"
    [ "$cur" = "$CUDA_VISIBLE_DEVICES" ] && echo "export $v=$out"
done
exit 0
"""


def _number(device: str) -> str:
    """The GPU number in a device file's name (``/dev/nvidia1`` -> ``1``)."""
    m = re.search(r"([0-9]+)$", device)
    if m is None:
        raise ValueError(f"{device}: a GPU device file's name ends in its number")
    return m.group(1)


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False
