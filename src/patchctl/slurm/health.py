"""``validate --profile health`` (and ``--checks``) inside a Slurm job: the checks validate runs
over ssh (validate/checks/), run by the job's driver on the allocated nodes.

The job's driver sees the allocation as an ssh validate sees its hosts: a :class:`Cluster` whose
hosts are the job's nodes (their Slurm ``NodeAddr``, the tree's root, the job's GPUs per node),
and a plan of the same shape. Each host action then goes to its node as an ``srun --overlap``
step instead of an ssh (``remote.launcher``), and everything else is validate's own: the host
preflight (the stack it finds), the stack table, storage on every node's tree, data and
checkpoint directory, and the all-reduce busbw within, between and across nodes. The measured
:class:`Health` travels back in the job's output as JSON; :func:`load` rebuilds it on the other
side, so the report and its tables are those of an ssh run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, cast

from patchctl.clusters import Cluster, Host
from patchctl.remote import ssh
from patchctl.validate import plan as planning
from patchctl.validate import preflight, remote
from patchctl.validate.checks import runner
from patchctl.validate.checks.interconnect import Group, Interconnect
from patchctl.validate.checks.settings import Settings
from patchctl.validate.checks.stack import StackTable
from patchctl.validate.checks.storage import StorageRow
from patchctl.validate.errors import PreflightFailed
from patchctl.validate.model import HostPreflight, Node, Note


class _Step:
    """Where the ssh path has a connection master (``.socket``): a job step needs none."""

    socket: Path | None = None


#: set by the job's driver: ``env -u ROCR_VISIBLE_DEVICES`` where Slurm sets it beside CUDA's
unset: list[str] = []


def srun_words(node: Node, words: list[str]) -> list[str]:
    """A host action as one step of the job on ``node`` (the allocation's own, shared with the driver)."""
    srun = ["srun", "--overlap", "--nodes=1", "--ntasks=1", f"--nodelist={node.label}", "--kill-on-bad-exit=0"]
    return [*srun, *unset, *words]


def make_plan(
    request: dict[str, Any], nodes: list[str], addresses: dict[str, str], root: str, roots: dict[str, str] | None = None
) -> planning.Plan:
    """The allocation as validate's plan: one host per node, in Slurm's order (the first is the head);
    each host's tree at ``roots[node]`` (each node's own copy, without a shared root) or ``root``."""
    hosts = tuple(
        Host(n, (roots or {}).get(n, root), address=addresses[n], gpus=request["gpus"], ray_port=request["ray_port"])
        for n in nodes
    )
    cluster = Cluster(
        "slurm",
        hosts,
        root,
        Path(".patchctl/env.sh"),
        paths=dict(request["paths"]),
        env=dict(request["env"]),
        python=request["python"],
        preflight_skip=tuple(request.get("preflight_skip", ())),
        health=Settings(**request.get("health_settings", {})),
    )
    options = planning.Options(profile=request["profile"], checks=tuple(request.get("checks", ("stack",))))
    return planning.Plan(
        cluster,
        options,
        request["run_id"],
        planning.nodes(cluster),
        request["run_dir"],
        Path(request["run_dir"]),
    )


def run(plan: planning.Plan, note: Callable[[Note], None]) -> tuple[tuple[HostPreflight, ...], runner.Health]:
    """Every node's host preflight, then the checks; a failure raises validate's own error (with
    ``.preflight`` and ``.health`` attached as over ssh)."""
    remote.launcher = srun_words
    found = tuple(preflight.ask(plan, n, None, time.monotonic()) for n in plan.nodes)
    bad = next((p for p in found if p.failed), None)
    if bad is not None:
        first = bad.failed[0]
        failure = PreflightFailed(bad.label, first.check, first.value, first.fix, len(bad.failed) - 1)
        failure.preflight = found
        raise failure
    steps = cast(list[ssh.Master], [_Step() for _ in plan.nodes])
    return found, runner.run(plan, steps, found, note)


def stack_only(plan: planning.Plan, found: dict[str, dict[str, Any]], note: Callable[[Note], None]) -> runner.Health:
    """The stack table alone, of the rows each node's Ray step found (``found``: node -> row), for a
    training run that asked no check: what an ssh run's preflight always records."""
    rows = tuple(
        HostPreflight(n.label, (), n.host.address or n.label, n.host.gpus or 0, None, 0.0, found.get(n.label, {}))
        for n in plan.nodes
    )
    steps = cast(list[ssh.Master], [_Step() for _ in plan.nodes])
    return runner.run(replace(plan, options=replace(plan.options, checks=())), steps, rows, note)


def dump(health: runner.Health | None) -> dict[str, Any] | None:
    return None if health is None else asdict(health)


def load(doc: dict[str, Any] | None) -> runner.Health | None:
    """The :class:`runner.Health` a job's driver measured, from its JSON."""
    if not doc:
        return None
    st = doc.get("stack")
    stack = (
        StackTable(
            tuple(st["hosts"]),
            {k: tuple(v) for k, v in st["rows"].items()},
            tuple(st.get("mismatches", ())),
            tuple(st.get("warnings", ())),
            {k: (v[0], v[1]) for k, v in (st.get("compared") or {}).items()},
        )
        if st
        else None
    )
    storage = tuple(StorageRow(**{**r, "shared_with": tuple(r.get("shared_with", ()))}) for r in doc.get("storage", ()))
    ic = doc.get("interconnect")
    interconnect = (
        Interconnect(
            ic["backend"],
            tuple(Group(**{**g, "hosts": tuple(g["hosts"]), "sizes": tuple(g["sizes"])}) for g in ic["groups"]),
            tuple(ic.get("findings", ())),
            dict(ic.get("hosts", {})),
            float(ic.get("seconds", 0.0)),
        )
        if ic
        else None
    )
    return runner.Health(stack, storage, interconnect, dict(doc.get("seconds", {})))
