"""migrate on a Slurm cluster, after the tree reached the login node: every compute node shown to see it.

The login node is migrate's one host (sent, locked, verified, repaired, recorded as any host).
Then one short job step on the nodes (``srun``, no ssh to a compute node) hashes the tree each
node sees by content; a node whose digest is not the login node's is named as a mismatch, with
the commit its copy records. Without a shared root the login node first packs the tree it
verified, ``sbcast`` carries the archive to every node of a short allocation, and each node
unpacks it into its own root before it is hashed.

Each node is one more row of migrate's result (``NODE (srun)``), so the table, ``--json`` and
the exit code need nothing of their own.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from patchctl.clusters import Cluster
from patchctl.errors import BadOptionValue
from patchctl.migrate.results import HostResult, HostStatus, MigrateResult
from patchctl.slurm import login

_NODE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
#: sh script run by salloc on the login node: the archive to every node, unpacked there, removed
_SPREAD = (
    'a="$1"; d="$2"; shift 2; sbcast --force "$a" "$d" || exit 96; '
    'srun --ntasks-per-node=1 "$@"; rc=$?; srun --ntasks-per-node=1 rm -f "$d"; exit $rc'
)


def node_list(text: str) -> tuple[str, ...]:
    """``--nodes n1,n2`` as names; a word that is no Slurm node name is a usage error."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    bad = next((n for n in names if not _NODE.match(n)), None)
    if bad is not None:
        raise BadOptionValue("--nodes", bad, "a comma-separated list of Slurm node names, e.g. n1,n2")
    return names


def partition_nodes(cluster: Cluster) -> tuple[list[str], str]:
    """The partition's nodes (sinfo), or ``([], why)``."""
    s = login.job(cluster)
    words = ["sinfo", "-h", "-N", "-o", "%N", *([f"--partition={s.partition}"] if s.partition else [])]
    done = login.run(cluster, words, timeout=60)
    if done.returncode != 0:
        return [], f"sinfo failed on the login node: {login.tail(done.stderr)}"
    nodes = sorted(set(done.stdout.split()))
    return nodes, "" if nodes else f"sinfo lists no node in partition {s.partition or '(default)'}"


def extend(cluster: Cluster, result: MigrateResult, nodes: Sequence[str] = ()) -> MigrateResult:
    """``result`` with a row per compute node: whether it sees the tree the login node verified."""
    t0 = time.monotonic()
    s = login.job(cluster)
    root = cluster.root
    wanted = list(nodes)
    if not wanted:
        wanted, why = partition_nodes(cluster)
        if not wanted:
            return _with(result, [_row("(nodes)", root, HostStatus.FAILED, t0, why)])
    ref = login.answers(login.run(cluster, login.agent_words(cluster, ["digest", root]), timeout=600).stdout)
    if not ref or "tree" not in ref[0]:
        why = ref[0].get("error", "") if ref else "no answer"
        return _with(result, [_row(n, root, HostStatus.FAILED, t0, f"the login node's tree: {why}") for n in wanted])
    archive = None
    if s.shared_root:
        words = ["srun", *login.step_options(cluster, wanted), *login.agent_words(cluster, ["digest", root])]
    else:
        words, archive = _spread(cluster, wanted, root)
        if not words:
            why = f"the login node could not pack its tree into {archive}"
            return _with(result, [_row(n, root, HostStatus.FAILED, t0, why) for n in wanted])
    try:
        done = login.run(cluster, words, timeout=max(600, cluster.timeout * 10))
    finally:
        if archive is not None:
            login.run(cluster, ["rm", "-f", "--", archive], timeout=60)
    seen = {a["node"]: a for a in login.answers(done.stdout)}
    problem = "" if done.returncode == 0 else login.tail(done.stderr)
    rows = [_judge(n, s.node_root(root, n), ref[0], seen.get(n), problem, t0) for n in wanted]
    return _with(result, rows)


def _spread(cluster: Cluster, nodes: Sequence[str], root: str) -> tuple[list[str], str]:
    """Pack the login node's tree, then (the words of) one salloc that sbcasts and unpacks it on
    every node; the archive's path on the login node, to remove once it ran."""
    tag = secrets.token_hex(4)
    archive = f"{login.job(cluster).node_root(root, 'login')}/.patchctl/spread-{tag}.tar"
    # each node's own /tmp, the one folder every node has; a random name, written by sbcast --force
    dest = f"/tmp/patchctl-tree-{tag}.tar"  # noqa: S108 - see above
    packed = login.answers(login.run(cluster, login.agent_words(cluster, ["pack", root, archive]), timeout=600).stdout)
    if not packed or "error" in packed[0]:
        return [], archive
    unpack = login.agent_words(cluster, ["unpack", dest, root])
    return [
        "salloc",
        *login.step_options(cluster, nodes),
        "sh",
        "-c",
        _SPREAD,
        "patchctl-spread",
        archive,
        dest,
        *unpack,
    ], archive


def _judge(
    node: str, root: str, ref: dict[str, Any], seen: dict[str, Any] | None, problem: str, t0: float
) -> HostResult:
    if seen is None:
        return _row(node, root, HostStatus.FAILED, t0, f"no answer from the node's job step: {problem or 'none'}")
    if "error" in seen:
        return _row(
            node, root, HostStatus.MISMATCH, t0, f"sees no migrated tree at {seen.get('root', root)}: {seen['error']}"
        )
    if seen["tree"] != ref["tree"]:
        commit = (seen.get("commit") or "no commit")[:12]
        missing = f"; missing there: {', '.join(seen['missing'])}" if seen.get("missing") else ""
        return _row(
            node,
            root,
            HostStatus.MISMATCH,
            t0,
            f"sees a different tree at {seen['root']} ({seen['files']} files, commit {commit}{missing}) than "
            f"the login node verified (a stale NFS cache or another mount?)",
        )
    return _row(node, root, HostStatus.OK, t0, "", verified=True)


def _row(node: str, root: str, status: HostStatus, t0: float, reason: str, verified: bool = False) -> HostResult:
    return HostResult(f"{node} (srun)", root, status, 0, 0, time.monotonic() - t0, verified, reason)


def _with(result: MigrateResult, rows: list[HostResult]) -> MigrateResult:
    return replace(result, hosts=(*result.hosts, *rows))
