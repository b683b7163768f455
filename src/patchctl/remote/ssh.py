"""The one list of ssh options, used by ssh itself and by rsync's ``-e``, so both reach a host
identically: the user's ssh config (or the cluster's ``ssh_config`` via ``-F``), agent,
ProxyJump and host-key checking all apply, and nothing ever prompts (hosts run in parallel).

Each host gets one master connection (``ssh -M``) that the later ssh and rsync calls share
through its control socket, so a host costs one key exchange and login, not one per step.
"""

from __future__ import annotations

import contextlib
import shlex
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from patchctl import orphans, proc
from patchctl.clusters import Cluster, Host
from patchctl.errors import PatchctlError

# Run on the host as `python3 -c BOOTSTRAP`: one line of plain characters, so every login shell
# (sh, bash, zsh, csh, fish) passes it through unchanged; the agent's code arrives base64-encoded
# inside it, the request on stdin.
#: the control folders' prefix (see :mod:`patchctl.orphans`)
PREFIX = "pcm-"
# binascii, not base64: that module imports re and struct, ~5 ms of each host program's start
_BOOTSTRAP = 'import binascii;exec(compile(binascii.a2b_base64("{code}"),"patchctl-agent","exec"))'


def ssh_options(cluster: Cluster, control: Path | None = None) -> list[str]:
    """Options shared by every connection to the cluster's hosts (``control``: a master's socket)."""
    opts: list[str] = []
    if cluster.ssh_config is not None:
        opts += ["-F", str(cluster.ssh_config)]
    alive = max(1, min(15, cluster.timeout // 4))
    opts += [
        "-o",
        "BatchMode=yes",  # never prompt: a password prompt in a worker thread would hang
        # a cluster's network outruns ssh's zlib: a "Compression yes" in ~/.ssh/config would
        # cost CPU on both ends and slow the transfer (rsync's own -z is not used either)
        "-o",
        "Compression=no",
        "-o",
        f"ConnectTimeout={min(cluster.timeout, 20)}",
        "-o",
        f"ServerAliveInterval={alive}",
        "-o",
        f"ServerAliveCountMax={max(2, cluster.timeout // alive)}",
    ]
    if control is not None:
        opts += ["-o", f"ControlPath={control}", "-o", "ControlMaster=no"]
    return opts


def ssh_argv(cluster: Cluster, host: Host, remote: Sequence[str], control: Path | None = None) -> list[str]:
    """``ssh OPTIONS -- HOST REMOTE...``; each remote word is quoted for the remote shell, which
    re-parses the words ssh sends (ssh joins them with spaces)."""
    return ["ssh", *ssh_options(cluster, control), "--", host.ssh, *(shlex.quote(w) for w in remote)]


def python_words(cluster: Cluster, code_b64: str, args: Sequence[str] = ()) -> list[str]:
    """The host's argv that runs a base64-encoded Python program with the cluster's ``python``
    (``args``: its ``sys.argv[1:]``)."""
    if not code_b64.replace("+", "").replace("/", "").replace("=", "").isalnum():
        raise ValueError("code_b64 must be base64")  # a bug, not user input: the agent is ours
    # -I: no PYTHON* variables, user site or cwd on the path (the host's environment cannot change
    # what the agent imports); -S: no site module (stdlib only, and python starts faster)
    return [cluster.python, "-I", "-S", "-c", _BOOTSTRAP.format(code=code_b64), *args]


def python_argv(
    cluster: Cluster, host: Host, code_b64: str, control: Path | None = None, args: Sequence[str] = ()
) -> list[str]:
    """ssh to ``host`` running :func:`python_words` there."""
    return ssh_argv(cluster, host, python_words(cluster, code_b64, args), control)


def rsh_command(cluster: Cluster, control: Path | None = None) -> str:
    """The ssh command line for ``rsync -e``, which takes one string and splits it itself.

    rsync splits on spaces and honours single quotes (a doubled quote inside is a quote), so
    each word that needs it is wrapped that way; no shell is involved.
    """
    words = ["ssh", *ssh_options(cluster, control)]
    return " ".join(w if w and not any(c in w for c in " '\"\t\\") else "'" + w.replace("'", "''") + "'" for w in words)


def unreachable_reason(cluster: Cluster, host: Host, stderr: str) -> str:
    """ssh's exit 255 as a cause the user can act on, with the command to try by hand (with the
    cluster's ssh config, as migrate uses it)."""
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    tail = lines[-1] if lines else "no message"
    config = f"-F {shlex.quote(str(cluster.ssh_config))} " if cluster.ssh_config is not None else ""
    return f"ssh could not connect ({tail}); check that `ssh {config}{shlex.quote(host.ssh)}` logs in without a prompt"


class Master:
    """One ``ssh -M -N`` per host, started and stopped by patchctl: no ControlPersist daemon, a
    child of patchctl that the kernel kills when patchctl dies (:mod:`patchctl.proc`), taking
    every ssh and rsync session multiplexed over it along. ``start`` begins the login and returns
    at once; ``open`` waits for it and returns None once logged in, else ssh's reason. Both may
    be called from several threads; the host is logged in to once."""

    def __init__(self, cluster: Cluster, host: Host, control_dir: Path, index: int) -> None:
        self.cluster, self.host = cluster, host
        self.socket = control_dir / f"h{index}"  # short: a unix socket path has ~100 bytes
        #: when the login began (the host's run is timed from here)
        self.started = time.monotonic()
        self._proc: subprocess.Popen[bytes] | None = None
        self._err: IO[bytes] | None = None
        self._lock = threading.Lock()
        self._outcome: tuple[str | None] | None = None

    def start(self) -> None:
        with self._lock:
            self._start()

    def open(self) -> str | None:
        with self._lock:
            if self._outcome is None:
                self._start()
            if self._outcome is None:
                self._outcome = (self._wait(),)
            return self._outcome[0]

    def logged_in(self, stop: threading.Event) -> bool:
        """Wait, without ``open``'s lock, until the login is done (True) or has ended, was closed,
        was never begun or ``stop`` is set (False): for a helper that must never hold up ``close``,
        which takes that lock (see migrate.session)."""
        while not stop.is_set():
            if self.socket.exists():
                return True
            login = self._proc
            if self._outcome is not None or login is None or login.poll() is not None:
                return False
            time.sleep(0.005)
        return False

    def _start(self) -> None:
        if self._proc is not None or self._outcome is not None:
            return
        argv = [
            "ssh",
            *ssh_options(self.cluster),
            "-M",
            "-N",
            "-o",
            f"ControlPath={self.socket}",
            "-o",
            "ControlPersist=no",
            "--",
            self.host.ssh,
        ]
        self.started = time.monotonic()
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 - outlives start(): close() closes it
        try:
            # a session of its own: a Ctrl-C at the terminal must not end the login under patchctl
            self._proc = proc.spawn(argv, stderr=self._err, new_session=True)
        except PatchctlError as exc:  # ssh itself is missing: this host's failure, like the others'
            self._outcome = (str(exc),)

    def _wait(self) -> str | None:
        assert self._proc is not None and self._err is not None
        limit = min(self.cluster.timeout, 20) + 10
        try:
            while time.monotonic() < self.started + limit:
                if self.socket.exists():
                    return None
                if self._proc.poll() is not None:
                    self._err.seek(0)
                    return unreachable_reason(self.cluster, self.host, self._err.read().decode("utf-8", "replace"))
                time.sleep(0.005)
        finally:
            self._err.close()  # the master keeps its own descriptor
        self._stop()
        return f"ssh did not finish logging in within {limit} s"

    def lost(self, wait: float = 2.0) -> bool:
        """Whether the login ended under us (the host went down, the network dropped), waiting up
        to ``wait`` seconds for the master to notice. rsync reports such a loss as exit 12 or 255,
        depending on whether ssh had exited when it looked, so its code alone cannot tell."""
        if self._proc is None:
            return False
        try:
            self._proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            return False
        return True

    def close(self) -> None:
        with self._lock:
            self._outcome = self._outcome or ("closed",)
            self._stop()
            if self._err is not None:
                self._err.close()

    def _stop(self) -> None:
        """Ask the master to exit through its socket (it can miss a SIGTERM that races its
        poll loop), then make sure."""
        if self._proc is None or self._proc.poll() is not None:
            return
        if self.socket.exists() and not mux_terminate(self.socket):
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.run(
                    [
                        "ssh",
                        *ssh_options(self.cluster),
                        "-o",
                        f"ControlPath={self.socket}",
                        "-O",
                        "exit",
                        "--",
                        self.host.ssh,
                    ],
                    check=False,
                    timeout=5,
                )
        else:  # still logging in (migrate stopped early, e.g. on a bad --target): nothing to close cleanly
            self._proc.terminate()
        try:
            self._proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


#: ssh's multiplexing protocol (OpenSSH's PROTOCOL.mux): the messages ``ssh -O exit`` sends
_MUX_HELLO, _MUX_VERSION, _MUX_TERMINATE, _MUX_OK = 0x00000001, 4, 0x10000005, 0x80000001


def mux_terminate(socket_path: Path, timeout: float = 2.0) -> bool:
    """What ``ssh -O exit`` does, spoken here: a hello and a terminate request on the master's
    control socket. True when the master said it ends (or closed the socket on it, as it
    does); False on anything else (an older or other ssh, a socket gone), for the caller to
    fall back to ``ssh -O exit``; either way the caller then waits for the master to exit.

    One ``ssh -O exit`` per host at the end of every migrate was a process of its own (ssh's
    start, its config read): 30-100 ms on a busy 2-core machine, on the last host's critical
    path (issue 39).
    """

    def message(*words: int) -> bytes:
        body = b"".join(struct.pack(">I", w) for w in words)
        return struct.pack(">I", len(body)) + body

    def first_word(conn: socket.socket) -> int | None:
        head = _read_exactly(conn, 4)
        body = _read_exactly(conn, struct.unpack(">I", head)[0]) if head is not None else None
        return struct.unpack(">I", body[:4])[0] if body is not None and len(body) >= 4 else None

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(str(socket_path))
            conn.sendall(message(_MUX_HELLO, _MUX_VERSION))
            if first_word(conn) != _MUX_HELLO:
                return False
            conn.sendall(message(_MUX_TERMINATE, 1))
            # OpenSSH's master often ends before its reply is out: the socket closes, which
            # ``ssh -O exit`` takes as done too (mux.c, mux_client_request_terminate)
            reply = conn.recv(4, socket.MSG_PEEK)
            return not reply or first_word(conn) == _MUX_OK
    except (OSError, struct.error):
        return False


def _read_exactly(conn: socket.socket, size: int) -> bytes | None:
    """``size`` bytes from the socket ``conn``, None if it ends first (or ``size`` is absurd)."""
    if size > 1 << 16:
        return None
    out = b""
    while len(out) < size:
        chunk = conn.recv(size - len(out))
        if not chunk:
            return None
        out += chunk
    return out


class Connections:
    """The cluster's master connections in a private socket directory, logged in to as early as
    possible: ``migrate.start`` opens them before the CLI loads the patchsets and the rest of
    migrate, so the hosts' logins overlap that work and the hashing of the tree. Only the first ``jobs``
    hosts start at once; the others start when a worker takes them up."""

    def __init__(self, cluster: Cluster, jobs: int | None = None) -> None:
        # in /tmp, not $TMPDIR: the control sockets live here and a unix socket path is short;
        # owned, so that the next run removes it after a kill -9 of this one
        self.dir = orphans.owned_dir(PREFIX)
        self.masters = [Master(cluster, h, self.dir, i) for i, h in enumerate(cluster.hosts)]
        for master in self.masters[: jobs or len(self.masters)]:
            master.start()

    def close(self) -> None:
        for master in self.masters:
            master.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Connections:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
