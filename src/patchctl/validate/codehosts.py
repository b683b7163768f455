"""``patched-code-ran`` over every node: each host's code-hook records brought home and judged.

The trainer on the head judges the records its own tree holds (train/codehook.py); a worker node
writes its processes' records into its own tree, where the head never looks. After the run, every
host answers a ``records`` request (host/records.py) with its records, its tree's code patches and
migrate's sha256 of each patched file there. They are copied into ``RUN_DIR/codehook/<label>/``
and judged together, host by host:

* every watched import of a process on a host comes from *that host's* tree (a worker node whose
  Ray workers import the head's path, a copy on ``PYTHONPATH`` or site-packages fails);
* every patched module a process executed hashes to what migrate placed and verified on that
  host (a tree reverted or edited after migrate, at the same path as the good one, fails);
* every node recorded at least one process (a node whose workers lost the hook proves nothing);
* and, over all processes, what ``codehook.coverage`` asks (each patch on the run's path imported,
  a rollout patch in the engine's workers).

The gate replaces the head's own ``patched-code-ran`` in the verdict and in the fetched
``report.json``, whose ``patched_code.hosts`` lists the processes per host.
"""

from __future__ import annotations

import json
import os
import queue
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from patchctl import fsutil
from patchctl.remote import ssh
from patchctl.train import codehook, weightsmatch
from patchctl.train.codeproof import Process, Proof, Watch
from patchctl.train.gates import Gate, GateStatus
from patchctl.train.weightsmatch import Sync
from patchctl.validate import plan as planning
from patchctl.validate import remote
from patchctl.validate.model import Node

NAME = codehook.DIR_NAME
_SAFE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
_RECORD = re.compile(r"^[0-9]{1,10}\.jsonl$")
BAR = "every code patch imported from each host's own tree, as migrate placed it; no verl from elsewhere"


@dataclass(frozen=True)
class HostCode:
    """One host's records of the run and what migrate recorded there."""

    label: str
    #: the host's tree, as the host resolves it
    root: str
    processes: tuple[Process, ...]
    #: patched file (tree-relative) -> the sha256 migrate placed and verified; None: not recorded
    migrated: dict[str, str] | None
    #: the watches this host's apply record lists
    watches: tuple[Watch, ...] = ()
    #: why the records could not be read ("" when they were)
    error: str = ""
    #: some records were left out (over the host's byte budget)
    cut: bool = False
    #: the weight fingerprints its processes recorded (weights-match)
    weights: tuple[Sync, ...] = ()


def collect(plan: planning.Plan, masters: list[ssh.Master]) -> tuple[HostCode, ...]:
    """Every host's records, asked in parallel, written home under ``RUN_DIR/codehook/<label>``."""
    rel = str(PurePosixPath(plan.remote_run_dir).relative_to(plan.head.host.root))
    with ThreadPoolExecutor(max_workers=len(plan.nodes)) as pool:
        got = list(pool.map(lambda n: _ask(plan, n, masters[n.index].socket, rel), plan.nodes))
    home = fsutil.renew_folder(plan.run_dir / NAME)
    for node, (host, texts) in zip(plan.nodes, got, strict=True):
        folder = fsutil.renew_folder(home / (host.label if _SAFE.match(host.label) else f"host{node.index}"))
        for name, text in sorted(texts.items()):
            if _RECORD.match(name):  # the host names them: nothing but <pid>.jsonl is written here
                fsutil.write_into(folder, name, text.encode("utf-8"))
    return tuple(h for h, _ in got)


def _ask(plan: planning.Plan, node: Node, control: Path | None, rel: str) -> tuple[HostCode, dict[str, str]]:
    try:
        reply = remote.call(plan.cluster, node, "records", {"run_rel": rel}, plan.cluster.timeout * 2, control)
    except remote.Ended as exc:
        _, problem, _ = remote.failure(plan.cluster, node, exc.returncode, exc.stderr)
        return HostCode(node.label, node.host.root, (), None, error=problem), {}
    except queue.Empty:
        return HostCode(node.label, node.host.root, (), None, error="no answer in time"), {}
    texts = {str(k): str(v) for k, v in dict(reply.get("records") or {}).items() if _RECORD.match(str(k))}
    watches = tuple(Watch(*map(str, w)) for w in reply.get("watches") or () if len(w) == 4)
    migrated = reply.get("migrated")
    return HostCode(
        node.label,
        str(reply.get("root") or node.host.root),
        codehook.parse(list(texts.values())),
        {str(k): str(v) for k, v in migrated.items()} if isinstance(migrated, dict) else None,
        watches,
        cut=bool(reply.get("cut")),
        weights=weightsmatch.parse(list(texts.values())),
    ), texts


def watches(hosts: tuple[HostCode, ...]) -> tuple[Watch, ...]:
    """The code patches of the run: the union of every host's apply record, head first."""
    out: list[Watch] = []
    for h in hosts:
        out += [w for w in h.watches if w not in out]
    return tuple(out)


def _inside(file: str, root: str) -> bool:
    try:
        return os.path.commonpath([os.path.realpath(file), root]) == root
    except ValueError:
        return False


def gate(hosts: tuple[HostCode, ...]) -> Gate:
    found = watches(hosts)
    if not found:
        return Gate(
            "patched-code-ran", GateStatus.SKIP, None, BAR, "no code patch in the hosts' .patchctl/applied.json"
        )
    for h in hosts:
        if h.error:
            return _fail(0, f"{h.label}: its code-hook records could not be read ({h.error})")
    everyone = tuple(p for h in hosts for p in h.processes)
    if not everyone:
        return _fail(
            0,
            "no process on any host loaded patchctl's code hook (was PYTHONPATH replaced?), so nothing "
            "shows that the patched code ran",
        )
    by_path = {w.module: w.path for w in found}
    for h in hosts:
        if not h.processes:
            return _fail(
                0,
                f"{h.label}: no process of the run recorded anything there, so nothing shows which verl "
                f"its Ray workers ran (its raylet was started without patchctl's code hook)",
            )
        for p in h.processes:
            for module, file in sorted(p.imports.items()):
                if not _inside(file, h.root):
                    return _fail(
                        1,
                        f"{h.label}: pid {p.pid} ({p.role}) ran {module} from {file}, not {h.label}'s own tree "
                        f"{h.root}; each node must import its own tree (a verl in site-packages, another "
                        "copy on PYTHONPATH, or another host's path first on sys.path shadows it)",
                    )
                path = by_path.get(module)
                want = (h.migrated or {}).get(path or "")
                got = p.digests.get(module)
                if path and want and got != want:
                    return _fail(
                        1,
                        f"{h.label}: pid {p.pid} ({p.role}) ran {module} from {file} with sha256 "
                        f"{(got or 'unreadable')[:12]}, not the {want[:12]} migrate placed and verified there: "
                        f"{h.label}'s tree changed after migrate (reverted or edited); run "
                        "`patchctl migrate` again",
                    )
    proof = Proof(hosts[0].root, found, everyone)
    failed = codehook.coverage(proof)
    if failed is not None:
        return failed
    on_path = [w for w in found if proof.on_path(w)]
    if not on_path:
        return Gate("patched-code-ran", GateStatus.SKIP, len(everyone), BAR, "no code patch is on this run's path")
    per_host = ", ".join(f"{h.label}: {len(h.processes)}" for h in hosts)
    unchecked = [h.label for h in hosts if h.migrated is None]
    note = (
        f"; sha256 not compared on {', '.join(unchecked)} (migrate recorded none there: run migrate again)"
        if unchecked
        else "; each patched module's sha256 as migrate placed it"
    )
    return Gate(
        "patched-code-ran",
        GateStatus.PASS,
        len(everyone),
        BAR,
        f"{len(everyone)} processes on {len(hosts)} hosts ({per_host}), verl from each host's own tree{note}",
    )


def blamed(plan: planning.Plan, trained: Any) -> str:
    """The host a failed run is charged to: the one the first failed gate names when that is
    this gate naming a node ("node2: ..."), else the head, where the trainer ran."""
    failed = [g for g in trained.gates if g.get("status") == GateStatus.FAIL.value]
    if failed and failed[0].get("name") == "patched-code-ran":
        for n in plan.nodes:
            if str(failed[0].get("reason", "")).startswith(n.label + ": "):
                return n.label
    return plan.head.label


def _fail(value: int, reason: str) -> Gate:
    return Gate("patched-code-ran", GateStatus.FAIL, value, BAR, reason)


def to_json(hosts: tuple[HostCode, ...]) -> list[dict[str, Any]]:
    """The processes per host, each with what it imported, from where and with which sha256."""
    by_path = {w.module: w.path for w in watches(hosts)}
    return [
        {
            "host": h.label,
            "root": h.root,
            "error": h.error or None,
            "migrated_sha256": h.migrated,
            "processes": [
                {
                    "pid": p.pid,
                    "role": p.role,
                    "imports": {
                        m: {
                            "file": f,
                            "sha256": p.digests.get(m),
                            "own_tree": _inside(f, h.root),
                            "as_migrated": None
                            if h.migrated is None or by_path.get(m) not in h.migrated
                            else p.digests.get(m) == h.migrated[by_path[m]],
                        }
                        for m, f in sorted(p.imports.items())
                    },
                }
                for p in h.processes
            ],
        }
        for h in hosts
    ]


def weights_gate(hosts: tuple[HostCode, ...]) -> Gate:
    """``weights-match`` over every host's fingerprints (the engine may sit on another node than
    the trainer's rank that fed it); pids are told apart per host."""
    records = tuple(
        Sync(r.pid + 10_000_000 * i, r.side, r.sync, r.ms, r.params) for i, h in enumerate(hosts) for r in h.weights
    )
    return weightsmatch.judge(records)


def apply(run_dir: Path, hosts: tuple[HostCode, ...], *new: Gate) -> bool:
    """Put the all-host gates and the per-host listing into the fetched ``report.json``; the
    report's verdict is recomputed. Returns whether the report now passes (True: no report)."""
    path = run_dir / "report.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True
    names = {g.name for g in new}
    gates = [x for x in doc.get("gates", []) if x.get("name") not in names]
    gates += [{**asdict(g), "status": g.status.value} for g in new]
    doc["gates"] = gates
    records = tuple(r for h in hosts for r in h.weights)
    doc["weights_match"] = weightsmatch.summary(records) if records else None
    passed = all(x.get("status") != GateStatus.FAIL.value for x in gates)
    doc["verdict"] = "pass" if passed else "fail"
    doc.setdefault("patched_code", None)
    doc["patched_code"] = {**(doc["patched_code"] or {}), "hosts": to_json(hosts)}
    fsutil.write_into(run_dir, "report.json", (json.dumps(doc, indent=2) + "\n").encode("utf-8"))
    return passed
