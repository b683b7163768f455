"""``gpuusers``: who else uses this host's GPUs, beyond patchctl's own claims (gpulease.py).

A run of another user, or a trainer started without patchctl, claims nothing. Two things still
show it: nvidia-smi's compute processes on the GPU, and verl's weight-sync socket bound under
``/tmp`` (``/proc/net/unix`` lists every bound socket of the host's network namespace, whoever
owns it). And whether the socket is named per GPU or per host decides whether other GPUs help:
that is read from the tree's own rollout code, which is what will run.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchctl.gpulease import Busy, Gpu, Lease, Owner, Refused, acquire, claimed, probe

#: an ``ipc://`` path in verl's rollout code: the literal start and the first ``{...}`` after it
_IPC = re.compile(r"""ipc://(/[^"'{\s]*)\{([^}"']*)\}([^"'\s]*)""")


@dataclass(frozen=True)
class WeightSocket:
    """How the tree names its trainer-to-vLLM socket."""

    #: the path's literal start, e.g. /tmp/rl-colocate-zmq-
    prefix: str
    #: "gpu" (named by the GPU's UUID), "process" (by a pid: no two runs share it), "host"
    per: str


def weight_socket(root: Path) -> WeightSocket | None:
    """The tree's weight-sync socket (verl/workers/rollout), None where it has none under /tmp."""
    found: list[WeightSocket] = []
    base = root / "verl" / "workers" / "rollout"
    for path in sorted(base.rglob("*.py")) if base.is_dir() else []:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for m in _IPC.finditer(text):
            name = m.group(0)
            if not m.group(1).startswith("/tmp/"):  # noqa: S108 - verl's name, read here, never made
                continue
            per = "gpu" if "uuid" in name else "process" if "pid" in m.group(2) else "host"
            found.append(WeightSocket(m.group(1), per))
    order = {"host": 0, "gpu": 1, "process": 2}
    return min(found, key=lambda s: order[s.per]) if found else None


def gpus(cvd: str | None, count: int | None = None) -> tuple[Gpu, ...]:
    """The GPUs a run here uses: nvidia-smi's, within ``CUDA_VISIBLE_DEVICES``, the first
    ``count`` of them where given (the ones Ray offers)."""
    from patchctl.validate.host import form

    rows = [r for r in form.visible(form.gpu_table(), cvd) if not r[1].startswith("unknown:")]
    rows = rows if count is None else rows[:count]
    seen: dict[str, Gpu] = {}
    for r in rows:
        seen.setdefault(r[1], Gpu(r[0], r[1]))
    return tuple(seen.values())


def compute_apps() -> list[tuple[int, str, str]]:
    """``(pid, GPU UUID, used memory)`` per compute process nvidia-smi lists; [] without one."""
    from patchctl.validate.host import form  # host-side module: loaded only where GPUs are asked

    rows = form.smi_rows("--query-compute-apps=pid,gpu_uuid,used_memory", 3)
    # a row whose memory cell holds a comma is not nvidia-smi's: refused, as a fourth field was
    return [(int(pid), uuid, used) for pid, uuid, used in rows if pid.isdigit() and "," not in used]


def bound_sockets(prefix: str) -> list[tuple[str, int]]:
    """``(path, inode)`` of each unix socket bound at a path starting with ``prefix``."""
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return []
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 8 and parts[7].startswith(prefix) and parts[6].isdigit():
            out.append((parts[7], int(parts[6])))
    return out


def socket_holder(inode: int) -> int | None:
    """The pid holding a socket, where this user may look (its own processes; all, as root)."""
    needle = f"socket:[{inode}]"
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == needle:
                    return pid
            except OSError:
                continue
    return None


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8") as f:
            return f"pid {pid} ({f.read().strip()})"
    except OSError:
        return f"pid {pid} (not visible from here)"


def outside(owner: Owner, sock: WeightSocket | None) -> list[Busy]:
    """Users of ``owner``'s GPUs that hold no claim: their compute processes, and a bound
    weight-sync socket that this run's verl would bind too."""
    mine = {g.uuid: g for g in owner.gpus}
    out = [
        Busy(mine[uuid], _name(pid), f"a compute process on it ({mem}) that patchctl did not start for this run")
        for pid, uuid, mem in compute_apps()
        if uuid in mine and pid != os.getpid()
    ]
    if sock is None or sock.per == "process":
        return out
    for path, inode in bound_sockets(sock.prefix):
        gpu = next((g for u, g in mine.items() if u in path), None)
        if sock.per == "gpu" and gpu is None:
            continue
        if sock.per == "host" and "GPU-" in path:  # another verl's per-GPU name: no clash
            continue
        holder = socket_holder(inode)
        who = _name(holder) if holder else "a process of another user"
        out.append(Busy(gpu, who, f"it has verl's weight-sync socket {path} bound"))
    return out


def fix(busy: list[Busy], run: str, setting: str = "CUDA_VISIBLE_DEVICES") -> str:
    """What to do, in one clause: wait, or the GPUs of this host that nobody uses now."""
    if any(b.gpu is None for b in busy):
        return "wait for that run to end: with this verl only one run per host is safe, whatever GPUs it uses"
    used = {uuid for _, uuid, _ in compute_apps()} | claimed(run) | {b.gpu.uuid for b in busy if b.gpu}
    spare = [g.index for g in gpus(None) if g.uuid not in used]
    where = f"GPUs nobody uses (free here: {','.join(spare)})" if spare else "other GPUs (none is free here now)"
    return f"wait for that run to end, or set {setting} to {where}"


def busy(owner: Owner, sock: WeightSocket | None) -> list[Busy]:
    """Everything that forbids ``owner``'s run here now, nothing held (preflight's look)."""
    return probe(owner) + outside(owner, sock)


def host() -> str:
    return socket.gethostname()


def claim(owner: Owner, sock: WeightSocket | None) -> tuple[Lease | None, list[Busy]]:
    """Hold ``owner``'s GPUs for this process's life: (the lease, []) or (None, what forbids it)."""
    try:
        lease = acquire(owner)
    except Refused as exc:
        return None, exc.busy
    found = outside(owner, sock)
    if found and lease is not None:
        lease.release()
        return None, found
    return lease, []


def owner_here(
    command: str, run: str, run_dir: str, root: Path, cvd: str | None, count: int | None = None
) -> tuple[Owner, WeightSocket | None]:
    """The claim a run of ``command`` on the tree at ``root`` makes on this host, and the tree's socket."""
    sock = weight_socket(root)
    return Owner(
        run, command, run_dir, host(), gpus(cvd, count), host_wide=sock is not None and sock.per == "host"
    ), sock


def refusal(owner: Owner, found: list[Busy], setting: str = "CUDA_VISIBLE_DEVICES") -> tuple[str, str]:
    """(the one-line reason, what to do) for a run that may not start here."""
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return found[0].reason(owner.host) + more, fix(found, owner.run, setting)


def hold(owner: Owner, sock: WeightSocket | None) -> Lease | None:
    """:func:`claim`, raising :class:`~patchctl.errors.GpuInUse` when it is refused."""
    lease, found = claim(owner, sock)
    if found:
        from patchctl.errors import GpuInUse

        reason, what = refusal(owner, found)
        raise GpuInUse(reason, what)
    return lease


def validate_owner(request: dict[str, Any], run: str) -> tuple[Owner, WeightSocket | None]:
    """The claim of one ``validate`` host (preflight's look, the node's hold): the GPUs Ray offers."""
    rel = request.get("run_rel")
    run_dir = str(Path.cwd() / rel) if rel else f"validate run {run}"
    count = request.get("gpus")
    return owner_here(
        "patchctl validate",
        run,
        run_dir,
        Path.cwd(),
        os.environ.get("CUDA_VISIBLE_DEVICES"),
        int(count) if count is not None else None,
    )


#: where a validate host's GPUs are chosen
HOST_SETTING = "hosts[i].env.CUDA_VISIBLE_DEVICES"


def preflight_row(request: dict[str, Any]) -> dict[str, str]:
    """validate's ``gpu_lease`` row: no live run holds the GPUs this host's node will offer."""
    owner, sock = validate_owner(request, str(request["run"]))
    row = {"check": "gpu_lease", "status": "pass", "value": "", "fix": ""}
    if not owner.gpus:
        return {**row, "value": "no GPU to claim here"}
    found = busy(owner, sock)
    if found:
        value, what = refusal(owner, found, HOST_SETTING)
        return {**row, "status": "fail", "value": value, "fix": what}
    named = ", ".join(g.label() for g in owner.gpus)
    per = " (one run per host: this verl's weight-sync socket is named per host)" if owner.host_wide else ""
    return {**row, "value": f"no other live run holds {named}{per}"}


def node_claim(request: dict[str, Any]) -> tuple[Lease | None, dict[str, Any] | None]:
    """The node's hold on its GPUs for its whole life: (the lease, None) or (None, the refusal event)."""
    owner, sock = validate_owner(request, str(request["marker"]).split(".")[0])
    lease, found = claim(owner, sock)
    if not found:
        return lease, None
    value, what = refusal(owner, found, HOST_SETTING)
    return None, {"event": "refused", "lease": value, "fix": what}
