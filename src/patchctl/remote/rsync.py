"""rsync as the remote layer runs it: its exit codes as causes, and the wrapper that makes the
host's rsync hold the root's transfer lock (see :mod:`patchctl.remote.lock_agent`)."""

from __future__ import annotations

import shlex
from pathlib import Path

from patchctl.clusters import Cluster, Host
from patchctl.remote import lock, ssh

#: rsync exit codes (rsync(1) EXIT VALUES) as causes a user can act on
CAUSES = {
    1: "rsync rejected its arguments (syntax or usage error)",
    2: "the local and remote rsync cannot talk to each other (protocol incompatibility)",
    3: "a file or directory could not be selected (is the root writable?)",
    5: "the rsync session could not start on the host",
    10: "socket I/O error",
    11: "a file could not be written on the host (disk full, or no permission?)",
    12: "the connection dropped mid-transfer (rsync protocol stream broke)",
    14: "rsync's inter-process communication failed",
    20: "rsync was interrupted by a signal",
    22: "rsync could not allocate memory",
    23: "partial transfer: some files could not be transferred",
    24: "partial transfer: some source files vanished while being sent",
    30: "timeout: no data moved within the cluster's timeout",
    35: "timeout waiting for the connection",
    127: "rsync is not installed (locally or on the host)",
    255: "ssh could not connect",
}
#: the cause of an rsync whose ssh lost a host it had logged in to (exit 12 or 255)
LOST = "ssh could not reach the host any more (it went down, or the network dropped)"


def cause(returncode: int, stderr: str, *, connected: bool = False) -> str:
    """The rsync exit code as a plain cause, with rsync's own last line as evidence.

    ``connected``: the host was logged in before rsync started, so an ssh failure (255) means
    the host was lost on the way, not that it could never be reached."""
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    what = CAUSES.get(returncode, f"rsync failed with exit code {returncode}")
    if returncode == 255 and connected:
        what = LOST
    if "command not found" in stderr and "rsync" in stderr:
        what = "rsync is not installed on the host"
    detail = next((ln for ln in reversed(lines) if "rsync error:" not in ln), lines[-1] if lines else "")
    return f"rsync exit {returncode}: {what}" + (f" ({detail.strip()})" if detail else "")


def argv(cluster: Cluster, control: Path | None, *options: str) -> list[str]:
    """``rsync OPTIONS --timeout T -e SSH``: every rsync of migrate and validate starts so, over
    the cluster's ssh options (and the host's master connection, ``control``)."""
    return ["rsync", *options, "--timeout", str(cluster.timeout), "-e", ssh.rsh_command(cluster, control)]


#: seconds the host's rsync waits for the root's transfer lock, which this run's own agent holds
#: while it writes (the generated files, deletions); longer means another transfer holds it
TRANSFER_WAIT = 30.0


def locked_rsync_path(cluster: Cluster, host: Host) -> str:
    """``--rsync-path`` for a transfer into ``host.root``: the host's rsync started by the lock
    keeper, holding ``ROOT/.patchctl/transfer.lock`` until it ends. Not patchctl's process but
    the host's rsync holds it, so a transfer cut off from a killed migrate keeps the root until
    it really stops, and no newer migrate checks the root before then.

    rsync hands this string to the remote shell as it is, so each word is quoted for it here
    (as :func:`patchctl.remote.ssh.ssh_argv` quotes its words)."""
    words = ssh.python_words(
        cluster, lock.agent_b64(), ["transfer", lock.transfer_path(host), str(TRANSFER_WAIT), "rsync"]
    )
    return " ".join(shlex.quote(w) for w in words)
