"""Running the health checks a validate run asked for, after the preflight and before Ray.

``stack`` costs nothing more (the preflight found the versions) and runs on every validate;
``storage`` and ``interconnect`` measure, each timed on its own, when ``--checks`` or
``--profile health`` asks for them. A check that fails raises, with what was measured so far
attached (``.health``), so the report still shows it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchctl.remote import ssh
from patchctl.validate import plan as planning
from patchctl.validate.checks import busbw, interconnect, stack, storage
from patchctl.validate.errors import HealthCheckFailed, ReportUnreadable, ValidateFailed
from patchctl.validate.model import HostPreflight, Note

#: the checks, in the order they run; ``--checks`` takes these names
NAMES = ("stack", "storage", "interconnect")
#: the validate profile that runs every check and no training
PROFILE = planning.HEALTH


@dataclass(frozen=True)
class Health:
    stack: stack.StackTable | None = None
    storage: tuple[storage.StorageRow, ...] = ()
    interconnect: interconnect.Interconnect | None = None
    #: check -> seconds it took
    seconds: dict[str, float] = field(default_factory=dict)


def parse(text: str) -> tuple[str, ...]:
    """``--checks interconnect,storage``: known names, in run order; ``stack`` always runs."""
    asked = {t.strip() for t in text.split(",") if t.strip()}
    unknown = sorted(asked - set(NAMES))
    if unknown:
        raise ValueError(f"no check named {', '.join(unknown)}; use names from: {', '.join(NAMES)}")
    return tuple(n for n in NAMES if n in asked or n == "stack")


def earlier_stack(path: Path, required: bool = True) -> dict[str, Any] | None:
    """The stack table of an earlier run: its validate.json (the file, its run directory, or the
    report.json beside it); None when that run had none (or, unless ``required``, no validate.json)."""
    file = (
        path / "validate.json"
        if path.is_dir()
        else path
        if path.name == "validate.json"
        else path.parent / "validate.json"
    )
    if not required and not file.is_file():
        return None
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportUnreadable(str(file), str(exc)) from None
    table = ((doc.get("health") or {}).get("stack")) if isinstance(doc, dict) else None
    return table if isinstance(table, dict) else None


def run(
    plan: planning.Plan,
    masters: list[ssh.Master],
    preflight: tuple[HostPreflight, ...],
    note: Callable[[Note], None],
    old_stack: dict[str, Any] | None = None,
) -> Health:
    names, seconds = plan.options.checks, {}
    relaxed = all(n.env.get("RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL") == "minor" for n in plan.nodes)
    table = stack.table(preflight, relaxed)
    if old_stack is not None:
        table = stack.compare(table, old_stack)
    done = Health(table)
    try:
        stack.check(preflight, relaxed)
        for line in table.warnings:
            note(Note("stack", "validate", f"warning: {line}"))
        if "storage" in names:
            t0 = time.monotonic()
            rows = storage.run(plan, masters)
            seconds["storage"] = round(time.monotonic() - t0, 2)
            done = Health(table, rows, seconds=seconds)
            for r in rows:
                note(Note("storage", r.host, f"{r.dir} {r.status}" + (f": {r.note}" if r.note else "")))
            bad = next((r for r in rows if r.status == "fail"), None)
            if bad:
                raise HealthCheckFailed(
                    "storage",
                    bad.host,
                    f"{bad.dir} directory {bad.path}: {bad.note}",
                    "see the storage table; raise clusters.NAME.health.storage_fail_mbps "
                    "only if this speed is what the cluster has",
                )
        if "interconnect" in names:
            t0 = time.monotonic()
            backend, raw, info = interconnect.measure(plan, masters, preflight)
            result = busbw.judge(backend, raw, info, preflight, plan.cluster.health, time.monotonic() - t0)
            seconds["interconnect"] = result.seconds
            done = Health(table, done.storage, result, seconds)
            for line in result.findings:
                note(Note("interconnect", "validate", line))
            if result.failed:
                g = result.failed[0]
                named = next((f for f in result.findings if f.startswith("node ")), None)
                raise HealthCheckFailed(
                    "interconnect",
                    named.split()[1] if named else g.hosts[-1],
                    named or result.findings[0],
                    "see the interconnect table and the cause named",
                )
    except ValidateFailed as exc:
        exc.health = done  # type: ignore[attr-defined]
        raise
    return done
