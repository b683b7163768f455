"""A migrate's hold on each host root for its whole run (the host side is ``lock_agent.py``).

Two migrates to one root used to interleave their rsyncs and both fail (exit 23); a transfer
cut off from a killed migrate could rename stale files in after a newer migrate had verified
the root. Now each migrate holds ``ROOT/.patchctl/migrate.lock`` on the host from before its
first write until its last check, and its rsyncs and agents hold ``transfer.lock`` while they
write. A second migrate waits (``PATCHCTL_LOCK_WAIT`` seconds, as for a tree) and then ends
that host ``failed``, naming the holder; the other hosts go on.

The hold lives in an ssh session over the host's master connection: whichever way patchctl
ends, the session ends and the host lets go.
"""

from __future__ import annotations

import base64
import functools
import select
import socket
import subprocess
import tempfile
from pathlib import Path

from patchctl import lock as tree_lock
from patchctl import proc
from patchctl.clusters import Cluster, Host
from patchctl.errors import PatchctlError
from patchctl.remote import lock_agent, ssh


@functools.lru_cache(maxsize=1)
def agent_b64() -> str:
    return base64.b64encode(Path(lock_agent.__file__).read_bytes()).decode("ascii")


def transfer_path(host: Host) -> str:
    """The host's transfer lock (a path on the host)."""
    return host.root.rstrip("/") + "/" + lock_agent.TRANSFER


class RootLock:
    """The hold on one host's root: :meth:`wait` asks for it and says whether it was granted.

    Started as soon as the host is logged in, so the ssh session and python's start-up overlap
    the hashing of the tree here; asked only once the tree is ready, so a migrate that stops
    before (a bad file set) creates nothing on the host. Closed (the ``with`` block's end) once
    the host's run is over."""

    def __init__(self, cluster: Cluster, host: Host, control: Path | None) -> None:
        self.cluster, self.host = cluster, host
        self.wait_s = tree_lock.wait_seconds()
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 - outlives __init__: close() closes it
        self._proc: subprocess.Popen[bytes] | None = None
        self._missing = ""
        self._answer: tuple[str | None] | None = None
        #: once held: the root was the user's and held nothing but ``.patchctl`` when it was
        #: locked (the keeper's ``locked\tempty``), so this migrate's first transfer has no
        #: earlier tree to keep whole
        self.empty = False
        try:
            self._proc = proc.spawn(
                ssh.python_argv(cluster, host, agent_b64(), control, ["hold"]),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._err,
            )
        except PatchctlError as exc:  # ssh itself is missing
            self._missing = str(exc)

    def wait(self) -> str | None:
        """Ask for the root; None once it is held, else why not (held by another migrate, or the
        session failed). Asked once: a later call gives the same answer."""
        if self._answer is None:
            self._answer = (self._ask(),)
        return self._answer[0]

    def _ask(self) -> str | None:
        if self._proc is None:
            return self._missing
        assert self._proc.stdin is not None and self._proc.stdout is not None
        holder = f"{tree_lock.describe()} on {socket.gethostname()}"
        request = f"{self.host.root}\0{self.wait_s}\0{holder}\0".encode("utf-8", "surrogateescape")
        try:
            self._proc.stdin.write(request)
            self._proc.stdin.flush()
        except OSError:  # the session ended already: the exit code below tells why
            pass
        limit = self.wait_s + min(self.cluster.timeout, 20) + 10
        ready, _, _ = select.select([self._proc.stdout], [], [], limit)
        line = self._proc.stdout.readline() if ready else b""
        kind, _, why = line.decode("utf-8", "replace").rstrip("\n").partition("\t")
        if kind == "locked":
            self.empty = why == "empty"
            return None
        if kind == "error":
            return f"could not lock {self.host.root} on the host: {why}"
        if kind == "busy":
            return (
                f"{self.host.root} is being migrated by another patchctl ({why}); "
                f"waited {self.wait_s:.0f} s: run migrate again once it has ended"
            )
        if not ready:
            return f"the host's lock keeper did not answer within {limit:.0f} s"
        code = self._proc.wait()
        self._err.seek(0)
        stderr = self._err.read().decode("utf-8", "replace")
        if code == 255:
            return ssh.unreachable_reason(self.cluster, self.host, stderr)
        if code == 127:
            return (
                f"{self.cluster.python} is not installed there (migrate needs python3 >= 3.6; "
                f"set clusters.{self.cluster.name}.python)"
            )
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        return f"could not lock {self.host.root} on the host (exit {code}: {tail})"

    def close(self) -> None:
        """Let go: end-of-file for the lock keeper, which exits and so releases the root."""
        p, self._proc = self._proc, None
        if p is not None:
            try:
                assert p.stdin is not None
                p.stdin.close()
            except OSError:
                pass
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.stdout is not None:
                p.stdout.close()
        self._err.close()

    def __enter__(self) -> RootLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
