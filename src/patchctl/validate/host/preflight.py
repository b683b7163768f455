"""``preflight``: ``verify --env`` on this host, plus what validate itself needs here.

The environment checks are :mod:`patchctl.preflight`'s, run against the host's tree with the
cluster's interpreter and the env ``migrate`` rendered (the wrapper sourced it). validate adds:

- ``address``: Ray's node IP for the host (configured, else the address ssh reached it at,
  from ``SSH_CONNECTION``) must be one of this host's addresses;
- ``gpus``: the GPUs Ray will offer (configured, else counted by nvidia-smi within
  ``CUDA_VISIBLE_DEVICES``), and no more than there are;
- ``gpu_lease``: no live run (of patchctl or not) uses those GPUs (gpuusers.py);
- ``ray_running``: no Ray node already at that address (unless the user asked to join it);
- ``migrated``: the tree was verified on arrival by ``migrate`` (its provenance record);
- ``ray_auth`` / ``ray_listen``: the Ray here can enforce the run's token, and what it binds on
  every interface (raycheck.py).

torch, vLLM, flash-attn and verl are judged from what is found on disk, not imported (found.py),
and the host's stack (stack.py) comes back with the rows for the cluster's stack table.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from patchctl.validate.host import form, found, procs, raycheck, stack

#: verify --env checks validate never runs: its Ray check starts a throw-away local Ray, which
#: the real bring-up right after replaces
NOT_HERE = ("ray",)


def _row(check: str, status: str, value: str, fix: str = "") -> dict[str, str]:
    return {"check": check, "status": status, "value": value, "fix": fix}


def _address(configured: str | None) -> tuple[str, dict[str, str]]:
    if configured:
        address, how = configured, "configured"
    else:
        parts = os.environ.get("SSH_CONNECTION", "").split()
        address, how = (parts[2], "the address ssh reached") if len(parts) == 4 else ("", "")
    if not address:
        return "", _row(
            "address",
            "fail",
            "no address configured and none known from ssh",
            "set hosts[i].address to the IP the other hosts reach this one at",
        )
    try:
        with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as s:
            s.bind((address, 0))
    except OSError as exc:
        return address, _row(
            "address",
            "fail",
            f"{address} ({how}) is not an address of this host ({exc})",
            "set hosts[i].address to one of this host's IPs (`hostname -I`)",
        )
    return address, _row("address", "pass", f"{address} ({how})")


def _gpus(configured: int | None, table: list[list[str]]) -> tuple[int, dict[str, str]]:
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    seen = [r for r in form.visible(table, cvd) if not r[1].startswith("unknown:")] if table else []
    where = f" within CUDA_VISIBLE_DEVICES={cvd}" if cvd is not None else ""
    if configured is None:
        if not table:
            return 0, _row(
                "gpus",
                "warn",
                "no nvidia-smi here: Ray offers 0 GPUs",
                "set gpus (or hosts[i].gpus) if this host has GPUs",
            )
        return len(seen), _row("gpus", "pass", f"{len(seen)} counted{where}: {', '.join(r[2] for r in seen)}")
    if not table:
        status = "warn" if configured else "pass"
        return configured, _row(
            "gpus",
            status,
            f"{configured} configured; no nvidia-smi here to count them",
            "check the driver (nvidia-smi) on this host" if configured else "",
        )
    if configured > len(seen):
        return configured, _row(
            "gpus",
            "fail",
            f"{configured} configured, {len(seen)} visible{where}",
            "lower gpus, or list more GPUs in hosts[i].env.CUDA_VISIBLE_DEVICES",
        )
    return configured, _row("gpus", "pass", f"{configured} configured, {len(seen)} visible{where}")


def _existing(address: str, run: str, join: bool) -> tuple[dict[str, Any] | None, dict[str, str]]:
    found = next((r for r in procs.raylets(exclude=run + ".") if r["address"] == address), None)
    if found is None:
        return None, _row("ray_running", "pass", f"no Ray node at {address}")
    what = f"raylet pid {found['pid']} at {address}, cluster {found['gcs']}"
    if join:
        return found, _row("ray_running", "pass", f"{what}: joining it (--join)")
    return found, _row(
        "ray_running",
        "fail",
        f"a Ray node is already running here ({what})",
        "stop it (`ray stop` on the host) or pass --join to use it; validate never stops it",
    )


def _migrated(root: Path) -> dict[str, str]:
    try:
        prov = json.loads((root / ".patchctl" / "provenance.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return _row(
            "migrated",
            "warn",
            "no migrate record in .patchctl/provenance.json",
            "send the tree with `patchctl migrate CLUSTER` so it is verified on arrival",
        )
    if not prov.get("verified"):
        return _row(
            "migrated",
            "fail",
            "migrate found differences on this host last time",
            "run `patchctl migrate CLUSTER --checksum` and fix what it lists",
        )
    return _row("migrated", "pass", f"verified on arrival (commit {str(prov.get('commit') or '-')[:12]})")


def _environment(root: Path, skip: dict[str, str], facts: dict[str, Any]) -> list[dict[str, str]]:
    import sys
    from concurrent.futures import ThreadPoolExecutor

    from patchctl import preflight
    from patchctl.preflight.registry import CHECKS
    from patchctl.target import open_tree

    unknown = [s for s in skip if s not in CHECKS]
    if unknown:
        return [
            _row(
                "preflight_skip",
                "fail",
                f"no check named {', '.join(unknown)}",
                f"use names from: {', '.join(sorted(CHECKS))}",
            )
        ]
    wanted = [n for n in CHECKS if n not in skip and n not in NOT_HERE]
    ctx = preflight.build(open_tree(root), None, python=sys.executable)
    # the checks that import a package judge what stack.py found instead (found.py), at once
    imported = [
        n
        for n in wanted
        if n not in found.FOUND and (n != "vllm_attention_backend" or "VLLM_ATTENTION_BACKEND" in ctx.env)
    ]
    with ThreadPoolExecutor(max_workers=1) as pool:
        by_facts = pool.submit(found.rows, ctx, root, facts, wanted)
        report = preflight.run(ctx, only=imported)
        done = {r.name: _row(r.name, r.status.value, r.value, r.fix or "") for r in report.results}
        done.update(by_facts.result())
    if "vllm_attention_backend" in wanted and "vllm_attention_backend" not in done:
        done["vllm_attention_backend"] = _row(
            "vllm_attention_backend", "pass", "unset: vLLM picks a backend for the GPU"
        )
    left_out = {
        n: _row(n, "skip", f"left out ({skip.get(n) or 'validate starts Ray itself right after'})")
        for n in CHECKS
        if n not in done
    }
    return [done.get(n) or left_out[n] for n in CHECKS]


def stack_here(root: Path, table: list[list[str]] | None = None) -> dict[str, Any]:
    """This host's row of the stack table, with the names of the GPUs visible here (nvidia-smi's
    ``table``, asked now when not given): the preflight's, and a Slurm job's Ray step's (node.py)."""
    table = form.gpu_table() if table is None else table
    visible = form.visible(table, os.environ.get("CUDA_VISIBLE_DEVICES"))
    return stack.facts(root, [r[2] for r in visible if not r[1].startswith("unknown:")])


def run(request: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> int:
    t0 = time.monotonic()
    root = Path.cwd()
    address, addr_row = _address(request.get("address"))
    table = form.gpu_table()
    gpus, gpu_row = _gpus(request.get("gpus"), table)
    existing, ray_row = _existing(address, request["run"], bool(request.get("join")))
    from patchctl.gpuusers import preflight_row as gpu_lease  # no live run holds these GPUs (gpulease.py)

    rows = [addr_row, gpu_row, gpu_lease(request), ray_row, *raycheck.rows(request), _migrated(root)]
    if request.get("profile"):  # before Ray starts: a profile whose rollout the tree lacks (train/rollouts.py)
        from patchctl.train.rollouts import preflight_row

        rows.append(preflight_row(root, str(request["profile"])))
    facts = stack_here(root, table)
    rows += _environment(root, dict(request.get("skip", {})), facts)
    emit(
        {
            "event": "reply",
            "rows": rows,
            "address": address,
            "gpus": gpus,
            "existing": existing,
            "stack": facts,
            "seconds": round(time.monotonic() - t0, 3),
        }
    )
    return 0
