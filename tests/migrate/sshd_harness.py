"""A cluster of real OpenSSH servers on loopback addresses, for tests and benchmarks.

Each host is its own ``sshd -D`` on 127.0.0.N with a generated host key; one generated user
key logs in everywhere; a generated ssh config gives each host an alias (node1, node2, ...)
with strict host-key checking against a generated known_hosts file. Each host gets its own
root directory (see ``write_config``), so the hosts' trees are as separate as on real machines.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

SSHD = os.environ.get("PATCHCTL_SSHD", "/usr/sbin/sshd")  # sshd must be run by its absolute path


def missing_tools() -> str | None:
    """Why the harness cannot run here, or None."""
    for tool, package in (
        (SSHD, "openssh-server"),
        ("ssh", "openssh-client"),
        ("ssh-keygen", "openssh-client"),
        ("rsync", "rsync"),
    ):
        if shutil.which(tool) is None:
            return f"{tool} not found: apt-get install -y {package}"
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.2", 0))
    except OSError as exc:
        return f"cannot bind 127.0.0.2 ({exc})"
    return None


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (sshd's per-connection children call setsid, so a process
    group kill would miss them)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


@dataclass
class SshHost:
    alias: str
    address: str
    port: int
    home: Path
    config: Path
    proc: subprocess.Popen | None = field(default=None, repr=False)

    def start(self) -> None:
        with open(self.home / "sshd.log", "ab") as log:
            self.proc = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                # a host, not a child of the terminal: the user's Ctrl-C (to the whole foreground
                # group, as the demo test sends it) must not take the listener down mid-teardown
                start_new_session=True,
            )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd for {self.alias} exited: {(self.home / 'sshd.log').read_text()[-2000:]}")
            try:
                with socket.create_connection((self.address, self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"sshd for {self.alias} did not listen on {self.address}:{self.port}")

    def stop(self) -> None:
        """The host goes down: the listener and every session it started die at once."""
        if self.proc is None:
            return
        for pid in [*_descendants(self.proc.pid), self.proc.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait()
        self.proc = None


class LoopbackCluster:
    def __init__(self, base: Path, count: int, env: dict[str, str] | None = None, first: int = 2) -> None:
        self.base = base
        #: variables every session on every host gets (a login node's SLURM_CONF, as its /etc would give)
        self.env = dict(env or {})
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.key = base / "id_ed25519"
        self.known_hosts = base / "known_hosts"
        self.ssh_config = base / "ssh_config"
        base.mkdir(parents=True, exist_ok=True)
        if os.getuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
        self._keygen(self.key)
        (base / "authorized_keys").write_text(Path(f"{self.key}.pub").read_text())
        os.chmod(base / "authorized_keys", 0o600)
        self.hosts: list[SshHost] = []
        for i in range(count):
            address = f"127.0.0.{i + first}"
            home = base / f"node{i + 1}"
            home.mkdir(exist_ok=True)
            self._keygen(home / "ssh_host_ed25519_key")
            host = SshHost(f"node{i + 1}", address, _free_port(address), home, home / "sshd_config")
            self._sshd_config(host)
            self.hosts.append(host)
        #: an alias whose address nobody listens on
        self.down_alias, self.down_port = "node-down", _free_port("127.0.0.250")
        self._client_config()
        for h in self.hosts:
            h.start()

    @staticmethod
    def _keygen(path: Path) -> None:
        if not path.exists():
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "patchctl-test", "-f", str(path)],
                check=True,
                capture_output=True,
            )

    def _sshd_config(self, h: SshHost) -> None:
        h.config.write_text(
            "\n".join(
                [
                    f"ListenAddress {h.address}:{h.port}",
                    f"HostKey {h.home / 'ssh_host_ed25519_key'}",
                    f"PidFile {h.home / 'sshd.pid'}",
                    f"AuthorizedKeysFile {self.base / 'authorized_keys'}",
                    "StrictModes no",
                    "UsePAM no",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PubkeyAuthentication yes",
                    "PermitRootLogin prohibit-password",
                    f"AllowUsers {self.user}",
                    "MaxStartups 100:30:200",
                    "MaxSessions 100",
                    "PrintMotd no",
                    "LogLevel ERROR",
                    # each node has a home of its own, as separate machines do; it also keeps the account's
                    # real ~/.bashrc (pyenv init, whose rehash lock a killed login leaves behind) out of it
                    f"SetEnv HOME={h.home}" + "".join(f" {k}={v}" for k, v in self.env.items()),
                    "",
                ]
            )
        )

    def _client_config(self) -> None:
        lines, known = [], []
        for h in self.hosts:
            lines += [f"Host {h.alias}", f"  HostName {h.address}", f"  Port {h.port}", f"  HostKeyAlias {h.alias}"]
            pub = (h.home / "ssh_host_ed25519_key.pub").read_text().split()
            known.append(f"{h.alias} {pub[0]} {pub[1]}")
        lines += [f"Host {self.down_alias}", "  HostName 127.0.0.250", f"  Port {self.down_port}"]
        lines += [
            "Host *",
            f"  User {self.user}",
            f"  IdentityFile {self.key}",
            "  IdentitiesOnly yes",
            f"  UserKnownHostsFile {self.known_hosts}",
            "  GlobalKnownHostsFile /dev/null",
            "  StrictHostKeyChecking yes",
            "  PasswordAuthentication no",
            "  LogLevel ERROR",
            "",
        ]
        self.ssh_config.write_text("\n".join(lines))
        self.known_hosts.write_text("\n".join(known) + "\n")

    def write_config(
        self, path: Path, roots: Path, *, aliases: list[str] | None = None, name: str = "loop", extra: str = ""
    ) -> Path:
        """A patchctl.toml whose cluster ``name`` lists the aliases (default: every running host),
        each with its own root ``roots/<alias>/verl_Uky``; ``extra`` is appended inside the table."""
        aliases = aliases if aliases is not None else [h.alias for h in self.hosts]
        entries = [f'{{ ssh = "{a}", root = "{roots / a / "verl_Uky"}" }}' for a in aliases]
        path.write_text(
            f'[clusters.{name}]\nhosts = [{", ".join(entries)}]\nroot = "/unused"\n'
            f'ssh_config = "{self.ssh_config}"\n{extra}'
        )
        return path

    def cpu_seconds(self, settle: float = 5.0) -> float:
        """User+system CPU seconds the hosts have spent so far: every sshd listener with the
        sessions it has reaped (login, shell, rsync, agent). Waits up to ``settle`` seconds
        for sessions still closing, so a reading after a command includes all of its work."""
        deadline = time.monotonic() + settle
        running = [h.proc.pid for h in self.hosts if h.proc is not None]
        while time.monotonic() < deadline and any(_descendants(pid) for pid in running):
            time.sleep(0.01)
        ticks = 0
        for pid in running:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
        return ticks / os.sysconf("SC_CLK_TCK")

    def host(self, alias: str) -> SshHost:
        return next(h for h in self.hosts if h.alias == alias)

    def close(self) -> None:
        for h in self.hosts:
            h.stop()


@dataclass(frozen=True)
class Workspace:
    """Where a benchmark on loopback hosts works (see :func:`workspace`)."""

    #: the scratch folder: the hosts' sshd set-up and roots, and whatever the benchmark stages
    work: Path
    #: where the benchmark's reports go (made)
    out: Path
    loop: LoopbackCluster
    #: each host's tree root, ``work/hosts/<alias>/verl_Uky``
    roots: dict[str, Path]


@contextlib.contextmanager
def workspace(prefix: str, out: Path | None, count: int = 2) -> Iterator[Workspace]:
    """The set-up the validate benchmarks share (benchmarks/bench_validate.py, bench_health.py):
    a fresh scratch folder named ``prefix...``, the output folder (``out``, else one inside the
    scratch folder), ``count`` loopback hosts and a root per host. The hosts stop when the block
    ends; the folders stay, for the reader of the reports."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    out = (out or work / "out").resolve()
    out.mkdir(parents=True, exist_ok=True)
    loop = LoopbackCluster(work / "sshd", count)
    try:
        yield Workspace(work, out, loop, {h.alias: work / "hosts" / h.alias / "verl_Uky" for h in loop.hosts})
    finally:
        loop.close()
