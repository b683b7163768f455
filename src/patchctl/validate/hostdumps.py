"""Every host's share of a hung run, for ``doctor`` (issue 37, req. 2): stacks, flight recorder dumps, Ray logs.

When the head's trainer times out, its ``train`` says so ("hung") and waits before it kills the
trainer; meanwhile this asks each host of the cluster, in parallel over the ssh connection held
to it (the host action ``hostdump``, an argv list: nothing of the request reaches a shell), for
``py-spy dump`` of the run's Ray workers there, the NCCL flight recorder dumps its ranks write when
poked, and the node's Ray session logs, each host bounded by :data:`HOST_TIMEOUT`. Everything lands
in ``RUN_DIR/hosts/HOST/``: ``stacks/rank-R-pid-P.txt`` (``pid-P.txt`` without a rank),
``nccl_trace/rank_R`` (the ranks of another host than the head's: without them doctor could not
name a rank behind there), ``ray/<the log's path in the session, flattened>`` and
``capture.txt`` (what could not be taken there). ``doctor RUN_DIR`` reads them with the rest.

A host that cannot be reached, or does not answer in time, gets its one line in ``capture.txt``;
nothing stops the run's end for it. The host chooses nothing on this side: pids are numbers, and
log names are reduced to safe characters before they become file names under its folder.
"""

from __future__ import annotations

import base64
import binascii
import queue
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import Any

from patchctl import fsutil
from patchctl.remote import ssh
from patchctl.validate import plan as planning
from patchctl.validate import remote
from patchctl.validate.model import Node

HOSTS = "hosts"
STACKS = "stacks"
RAY = "ray"
FLIGHT = "nccl_trace"
#: what is kept of one host's flight recorder dumps, whatever it sends: how many, bytes each, bytes in all
MAX_DUMPS = 32
PER_DUMP = 8 * 1024 * 1024
DUMPS_PER_HOST = 24 * 1024 * 1024
_DUMP = re.compile(r"^rank_[0-9]{1,6}$")
NOTES = "capture.txt"
#: seconds one host may take to answer (py-spy dumps four at a time, 20 s at most each)
HOST_TIMEOUT = 90.0
_SAFE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def folder_name(node: Node) -> str:
    """The host's folder under ``hosts/``: its label where that is a plain name, else ``hostN``."""
    return node.label if _SAFE.match(node.label) else f"host{node.index}"


def log_name(path: str) -> str:
    """A Ray log's path in its session (``session_x/logs/raylet.out``) as one safe file name, keeping
    its suffix so doctor reads it as a log."""
    flat = _UNSAFE.sub("_", "__".join(p for p in PurePosixPath(path).parts if p not in ("", ".", "..")))
    return flat.lstrip("._-")[-120:] or "log.txt"


def capture(plan: planning.Plan, masters: list[ssh.Master]) -> dict[str, list[str]]:
    """Ask every host at once; write what each sent into its folder. {host folder: notes}."""
    rel = str(PurePosixPath(plan.remote_run_dir).relative_to(plan.head.host.root))
    with ThreadPoolExecutor(max_workers=len(plan.nodes)) as pool:
        replies = list(pool.map(lambda n: _ask(plan, n, masters[n.index].socket, rel), plan.nodes))
    out = {}
    for node, reply in zip(plan.nodes, replies, strict=True):
        out[folder_name(node)] = write(plan.run_dir, node, reply)
    return out


def _ask(plan: planning.Plan, node: Node, control: Path | None, rel: str) -> dict[str, Any]:
    request = {"marker": plan.marker(node), "run_rel": rel}
    try:
        return remote.call(plan.cluster, node, "hostdump", request, HOST_TIMEOUT, control)
    except remote.Ended as exc:
        _, problem, _ = remote.failure(plan.cluster, node, exc.returncode, exc.stderr)
        return {"notes": [f"{node.label}: could not be reached for its stacks and Ray logs: {problem}"]}
    except queue.Empty:
        return {"notes": [f"{node.label}: sent no stacks or Ray logs within {HOST_TIMEOUT:.0f} s"]}


def write(run_dir: Path, node: Node, reply: dict[str, Any]) -> list[str]:
    """One host's reply into ``run_dir/hosts/<folder>/``; its notes."""
    home = run_dir / HOSTS / folder_name(node)
    home.mkdir(parents=True, exist_ok=True)
    notes = [str(n)[:500] for n in reply.get("notes") or () if str(n).strip()]
    if reply.get("event") == "error":
        notes.append(f"{node.label}: {str(reply.get('error'))[:500]}")
    stacks = fsutil.renew_folder(home / STACKS)
    for s in reply.get("stacks") or ():
        pid, rank = s.get("pid"), s.get("rank")
        if not isinstance(pid, int) or not isinstance(s.get("text"), str):
            continue
        name = f"rank-{rank}-pid-{pid}.txt" if isinstance(rank, int) else f"pid-{pid}.txt"
        fsutil.write_into(stacks, name, s["text"].encode("utf-8"))
    logs = fsutil.renew_folder(home / RAY)
    for entry in reply.get("logs") or ():
        if isinstance(entry.get("path"), str) and isinstance(entry.get("text"), str):
            fsutil.write_into(logs, log_name(entry["path"]), entry["text"].encode("utf-8"))
    flight = fsutil.renew_folder(home / FLIGHT)
    left = DUMPS_PER_HOST
    for entry in list(reply.get("flight") or ())[:MAX_DUMPS]:
        name, data = entry.get("name"), entry.get("data")
        if not isinstance(name, str) or not _DUMP.match(name) or not isinstance(data, str):
            continue
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            notes.append(f"{node.label}: flight recorder dump {name} arrived broken: left out")
            continue
        if len(raw) > min(PER_DUMP, left):
            notes.append(
                f"{node.label}: flight recorder dump {name} ({len(raw)} bytes) is over what is kept of one "
                f"({min(PER_DUMP, left)} bytes): left out"
            )
            continue
        left -= len(raw)
        fsutil.write_into(flight, name, raw)
    text = "".join(f"{n}\n" for n in notes)
    fsutil.write_into(home, NOTES, text.encode("utf-8"))
    return notes
